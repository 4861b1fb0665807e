"""One declaration per setting: a field of RunConfig (or of one of its option groups) carries its command-line
option as dataclass field metadata, written with `option(default, help, ...)` beside the field's type.

From these declarations (`declared(RunConfig)`, in field order) harness/cli/declared.py makes the run command's
argument parser (and so the `--config` file's keys and docs/options.md) and the copy of the parsed options into
RunConfig, and harness/config/validate.py runs each field's own check. An option's flag is the field's name
(`max_tokens`: --max-tokens; a boolean that defaults to True: --no-NAME), with its section's prefix (--case-ffn,
--batch-wait); its kind comes from the field's type: a bool is a switch, `bool | None` is --NAME/--no-NAME, a
`tuple[X, ...]` a repeatable option, anything else takes one value converted by its type (int, float, Path, str).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import typing
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any


class Affects(enum.Flag):
    """What a setting changes (issue 41). Every key the harness keeps is computed from these marks, never from a
    hand-kept list: a new option declares its marks and every key follows (tests/config/test_affects.py walks every
    declared field). A setting may carry several of the first four; PRESENTATION and OPERATION stand alone.

    Where each mark is used: REQUEST, READING and ITEMS make the run's identity (config.json's config_hash: what a
    rerun or a sweep may reuse, harness/runner.py; the rows of a report, reporting/rowkeys.py); REQUEST settings
    reach the response-cache key through the prompt or backend.describe() (calling/cache_keys.py); the parts of a
    --shard run must agree on every REQUEST, READING and PUBLISHED setting (results/shards.py); PUBLISHED settings
    are judged against the paper's (reporting/paper_settings.py)."""

    REQUEST = enum.auto()  # the request sent (prompt, decoding, endpoint): the response-cache key, and so identity
    READING = enum.auto()  # how a reply is read, scored or kept: run identity, shard merge, what a rerun may reuse
    ITEMS = enum.auto()  # which items are scored (limit, shard, subset): identity; shards differ in it by design
    PUBLISHED = enum.auto()  # what a published number depends on: the comparability judgement
    PRESENTATION = enum.auto()  # only what is shown, printed or where it is read from or written to: no key
    # How the run is carried out (pace, retries, the cache file, spending, engine resources): the same requests
    # get the same answers, read the same way, whatever its value: no key.
    OPERATION = enum.auto()


KEYED = Affects.REQUEST | Affects.READING | Affects.ITEMS | Affects.PUBLISHED  # marks that enter some key
IDENTITY_MARKS = Affects.REQUEST | Affects.READING | Affects.ITEMS  # what decides a run's samples


def inconsistent(marks: Affects | None) -> str | None:
    """Why a declaration's marks cannot be right (None: they can): none given, or a no-key mark combined."""
    if marks is None or not marks:
        return "no affects= mark"
    for alone in (Affects.PRESENTATION, Affects.OPERATION):
        if alone in marks and marks != alone:
            return f"{alone.name} combined with {(marks & ~alone).name}: a setting that changes no key changes none"
    return None


# A single-field check: (value, flag) -> None, raising HarnessError with one line naming the flag.
Check = Callable[[Any, str], None]


@dataclass(frozen=True)
class Option:
    """A field's command-line option. What the field's type and default already say is not repeated here."""

    help: str  # --help's text (argparse's %(default)s and %% work); "{listed}": the names of `listed`
    flag: str = ""  # "": --<prefix><name>, "_" as "-" (--no-<name> for a bool defaulting to True)
    group: str | None = None  # the --help section; None: its section's (the top level's: the main list)
    metavar: str | None = None
    # The values it takes: a tuple, or "module:TABLE", a later stage's table whose keys they are (checked there)
    choices: tuple[str, ...] | str = ()
    listed: str = ""  # "module:TABLE" whose keys the help names (not enforced: the stage says what is wrong)
    convert: Callable[[str], Any] | None = None  # the typed word -> the value; None: the field's type
    words: tuple[tuple[str, Any], ...] = ()  # the words typed for its values (--reasoning: auto/yes/no)
    const: Any = None  # the value of the bare flag (--constrain); None: the flag needs its value
    check: Check | None = None  # the field's own check (harness/config/checks.py); combinations: validate.py
    grid: bool = False  # a comma list is a sweep (harness/sweep.py GRID_FIELDS)
    required: bool = False
    # What it changes (Affects above); None: not yet declared (tests/config/test_affects.py refuses that).
    affects: Affects | None = None


@dataclass(frozen=True)
class Section:
    """A field holding an option group (RunConfig.api ...): its options' --help section and flag prefix."""

    cls: type
    group: str | None = None  # None: the enclosing section's
    prefix: str = ""


def option(default: Any = dataclasses.MISSING, help: str = "", **kwargs: Any) -> Any:
    """A dataclass field with its option: `shots: int = option(0, "in-context examples k", check=at_least(0))`."""
    return field(default=default, metadata={"option": Option(help, **kwargs)})


def section(cls: type, group: str | None = None, prefix: str = "") -> Any:
    """A field holding an option group, built from its own defaults."""
    return field(default_factory=cls, metadata={"section": Section(cls, group, prefix)})


def switch(cls: type, help: str, prefix: str, affects: Affects | None = None) -> Any:
    """An option group that exists only when its flag is given (--batch: None without it)."""
    return field(
        default=None, metadata={"option": Option(help, affects=affects), "section": Section(cls, None, prefix)}
    )


@dataclass(frozen=True)
class Declared:
    """An option as the command line sees it: its field's path in RunConfig, flag, kind and default."""

    path: tuple[str, ...]  # ("api", "batch", "poll")
    option: Option
    flag: str
    group: str | None
    kind: str  # store, switch (--x), negated (--no-x for a True default), boolean (--x/--no-x), append
    convert: Callable[[str], Any]
    default: Any  # the field's

    @property
    def dest(self) -> str:
        """argparse's name for it in the parsed namespace."""
        return self.flag.removeprefix("--").replace("-", "_")

    def value(self, parsed: Any) -> Any:
        """The field's value for what argparse parsed."""
        if self.option.grid and isinstance(parsed, list):
            return parsed[0]  # a comma list's first value: a sweep's base (harness/cli/configs.py grid_from_args)
        if self.option.words:
            return dict(self.option.words)[parsed]
        if self.kind == "negated":
            return not parsed
        return tuple(parsed) if self.kind == "append" else parsed


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def declare(cls: type, f: dataclasses.Field[Any], prefix: str = "", group: str | None = None) -> Declared | None:
    """The field's option, or None for a field that is no option (a section, a start time)."""
    opt: Option | None = f.metadata.get("option")
    if opt is None:
        return None
    hint = _hints(cls)[f.name]
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    optional = type(None) in typing.get_args(hint)
    base = args[0] if optional and len(args) == 1 else hint
    default = None if f.default is dataclasses.MISSING else f.default
    if opt.words:
        kind = "store"
    elif "section" in f.metadata or (base is bool and not optional and default is False):
        kind = "switch"
    elif base is bool:
        kind = "negated" if default is True else "boolean"
    elif typing.get_origin(base) is tuple and typing.get_args(base)[1:] == (...,) and opt.convert is None:
        kind, base = "append", typing.get_args(base)[0]
    else:
        kind = "store"
    flag = opt.flag or ("--no-" if kind == "negated" else "--") + prefix + f.name.replace("_", "-")
    convert = opt.convert or (str if opt.words else base)
    return Declared((f.name,), opt, flag, opt.group or group, kind, convert, default)


def declared(cls: type, prefix: str = "", group: str | None = None) -> Iterator[Declared]:
    """Every option of the dataclass and its sections, in field order."""
    for f in dataclasses.fields(cls):
        d = declare(cls, f, prefix, group)
        if d is not None:
            yield d
        s: Section | None = f.metadata.get("section")
        if s is not None:
            for inner in declared(s.cls, prefix + s.prefix, s.group or group):
                yield dataclasses.replace(inner, path=(f.name, *inner.path))


def marked(cls: type, marks: Affects) -> list[Declared]:
    """The declared options of `cls` (and its sections) that carry any of `marks`, in field order."""
    return [d for d in declared(cls) if d.option.affects is not None and d.option.affects & marks]


def name_of(d: Declared) -> str:
    """A declared option's name in keys and messages: its field's path, dotted (think_tags, api.max_reply_mb)."""
    return ".".join(d.path)


def value_at(obj: Any, path: Sequence[str]) -> Any:
    """The value at a field path of a RunConfig, or of its config.json `settings` (a dict); None where a switch's
    section is off (--batch not given), or a record lacks it or holds no section where one should be."""
    for name in path:
        if isinstance(obj, dict):
            obj = obj.get(name)
        elif dataclasses.is_dataclass(obj):
            obj = getattr(obj, name)
        else:  # None (a section switched off), or a record holding something else where a section should be
            return None
    return obj
