"""The command line made from the settings' declarations (harness/config/option.py): `add_settings` adds a
dataclass's options to a parser, each in its --help section, and `build` copies what argparse parsed back into the
dataclass. The run command takes every option of RunConfig; reannotate, errors and the data commands the ones they
share, so an option is worded, defaulted and checked the same wherever it appears."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from harness.config.option import Declared, Section, declare, declared
from harness.types import HarnessError


class CommaList:
    """argparse `type=` of a grid option: a single value converted as before (argparse words its errors), or a
    comma list -> a list of converted values, order kept, repeats dropped (a bad item is one HarnessError line)."""

    def __init__(self, flag: str, convert: Callable[[str], Any] = str, choices: Sequence[str] = ()) -> None:
        self.flag, self.convert, self.choices = flag, convert, tuple(choices)
        self.__name__ = getattr(convert, "__name__", "value")  # argparse's "invalid int value: 'x'" names it

    def __call__(self, text: str) -> Any:
        if "," not in text:
            if self.choices and text not in self.choices:
                choices = ", ".join(map(repr, self.choices))  # argparse's own wording for a bad choice
                raise argparse.ArgumentTypeError(f"invalid choice: {text!r} (choose from {choices})")
            return self.convert(text)
        values = [v.strip() for v in text.split(",")]
        if any(not v for v in values):
            raise HarnessError(f"{self.flag} {text!r}: empty item in the comma list")
        return [self._item(v) for v in dict.fromkeys(values)]

    def _item(self, value: str) -> Any:
        if self.choices and value not in self.choices:
            name = self.flag.removeprefix("--")
            raise HarnessError(f"unknown {name} {value!r} in {self.flag}; choose from {', '.join(self.choices)}")
        try:
            return self.convert(value)
        except ValueError:
            kind = "an integer" if self.convert is int else f"a valid {self.__name__}"
            raise HarnessError(f"{self.flag}: {value!r} is not {kind}") from None


def table(reference: str) -> tuple[str, ...]:
    """The names of a later stage's table, "module:TABLE" (a declaration in harness/config cannot import it)."""
    module, _, name = reference.partition(":")
    return tuple(getattr(importlib.import_module(module), name))


def _kwargs(d: Declared, grid: bool) -> dict[str, Any]:
    o = d.option
    choices = table(o.choices) if isinstance(o.choices, str) else o.choices
    text = o.help.replace("{listed}", ", ".join(table(o.listed))) if o.listed else o.help
    kw: dict[str, Any] = {"help": text, "metavar": o.metavar}
    if d.kind in ("switch", "negated"):
        return {"action": "store_true", "help": text}
    if d.kind == "boolean":
        return kw | {"action": argparse.BooleanOptionalAction, "default": d.default}
    if o.words:
        return kw | {"choices": [w for w, _ in o.words], "default": next(w for w, v in o.words if v is d.default)}
    if d.kind == "append":
        kw |= {"action": "append", "default": list(d.default)}
    else:
        kw |= {"default": d.default, "required": o.required}
    if o.const is not None:
        kw |= {"nargs": "?", "const": o.const}
    if grid and o.grid:  # comma lists (a sweep): CommaList checks the choices of each item
        kw["type"] = CommaList(d.flag, d.convert, choices)
        if choices:
            kw["metavar"] = "{" + ",".join(choices) + "}"
        return kw
    if d.convert is not str:
        kw["type"] = d.convert
    return kw | ({"choices": list(choices)} if choices else {})


def add_settings(
    parser: argparse.ArgumentParser,
    cls: type,
    fields: Collection[str] | None = None,
    *,
    grid: bool = False,
    help: Mapping[str, str] | None = None,
    default: Mapping[str, Any] | None = None,
) -> None:
    """Add the options of `cls` (of its top-level `fields` only, sections whole, when given), in declaration order.
    `grid`: the options marked grid take comma lists; `help`/`default`: another command's own words for a shared
    option, by field name (reannotate's --max-tokens)."""
    help, default = help or {}, default or {}
    for d in declared(cls):
        name = d.path[0]
        if fields is not None and name not in fields:
            continue
        kw = _kwargs(d, grid)
        kw |= {"help": help[name]} if name in help else {}
        kw |= {"default": default[name]} if name in default else {}
        _group(parser, d.group).add_argument(d.flag, **kw)


def _group(parser: argparse.ArgumentParser, title: str | None) -> Any:
    """The parser itself, or its --help section of that title (made once, where its first option is)."""
    if title is None:
        return parser
    found = [g for g in parser._action_groups if g.title == title]
    return found[0] if found else parser.add_argument_group(title)


def build(cls: type, a: argparse.Namespace, prefix: str = "", group: str | None = None) -> Any:
    """An instance of `cls` from what argparse parsed; a field whose option the parser lacks keeps its default."""
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        d = declare(cls, f, prefix, group)
        s: Section | None = f.metadata.get("section")
        if s is not None:
            inner = build(s.cls, a, prefix + s.prefix, s.group or group)
            if d is None or getattr(a, d.dest, False):
                values[f.name] = inner
            elif given := [o.flag for o in declared(s.cls, prefix + s.prefix) if _given(o, a)]:
                raise HarnessError(f"{', '.join(given)}: the {d.flag}-* options go with {d.flag}")
        elif d is not None and hasattr(a, d.dest):
            values[f.name] = d.value(getattr(a, d.dest))
    return cls(**values)


def _given(d: Declared, a: argparse.Namespace) -> bool:
    """Typed (or set in a --config file): parsed as other than its default."""
    return getattr(a, d.dest, d.default) != d.default
