"""argparse as the commands use it: usage errors are one `error:` line, every default is shown in --help, and
every option added is kept (group, Action, kind) for --config files and the generated option reference."""

from __future__ import annotations

import argparse
import difflib
import sys
from dataclasses import dataclass
from typing import Any, NoReturn

from harness.types import HarnessError


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions kept as written; every option's help ends with its default unless it states one."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text, default = action.help or "", action.default
        unset = default is None or default is False or default == [] or default is argparse.SUPPRESS
        if "default" in text or unset or not action.option_strings:
            return text
        return f"{text} (default: %(default)s)"


@dataclass(frozen=True)
class Option:
    """One option as it was added: its group's title, the Action argparse returned, the `action=` word asked for.
    A --config file (harness/cli/config_file.py) and the option reference (docs/options.md) read these."""

    group: str | None
    action: argparse.Action
    kind: str  # "store", "store_true", "append", "boolean" (--x / --no-x)


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one `error:` line and exit 2 like every other bad input (cli.main),
    and every option added (to the parser or a group) is kept in `options`, in order.

    No abbreviations: argparse would take `--sto` for `--stop`, but a --config file's options are replaced by the
    command line's by their full names (config_file.py), so a prefix would add to the file's list instead of
    replacing it, and `--conf FILE` would be read as --config without the file ever being loaded. A prefix is
    an unrecognized argument, one `error:` line."""

    def __init__(self, **kwargs: object) -> None:
        self.options: list[Option] = []  # before argparse's own __init__, which adds -h
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(formatter_class=HelpFormatter, **kwargs)  # type: ignore[arg-type]

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        return self._record(None, super().add_argument(*args, **kwargs), kwargs.get("action"))

    def add_argument_group(self, *args: Any, **kwargs: Any) -> argparse._ArgumentGroup:
        group = super().add_argument_group(*args, **kwargs)
        add = group.add_argument

        def recorded(*a: Any, **k: Any) -> argparse.Action:
            return self._record(group.title, add(*a, **k), k.get("action"))

        group.add_argument = recorded  # type: ignore[method-assign]
        return group

    def _record(self, group: str | None, action: argparse.Action, asked: object) -> argparse.Action:
        kind = "boolean" if asked is argparse.BooleanOptionalAction else asked if isinstance(asked, str) else "store"
        if action.option_strings and kind != "help":
            self.options.append(Option(group, action, kind))
        return action

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        """An option this parser does not know is named first, with the one meant (`--modle`: did you mean
        --model?), before argparse would report a required option missing and never name the typo."""
        argv = list(sys.argv[1:] if args is None else args)
        known = {s for a in self._actions for s in a.option_strings}
        for token in argv:
            if token == "--":
                break
            name = token.split("=", 1)[0]
            if name.startswith("--") and name not in known:
                close = difflib.get_close_matches(name, sorted(known), n=1)
                self.error(f"unrecognized argument {name}" + (f": did you mean {close[0]}?" if close else ""))
        return super().parse_known_args(argv, namespace)

    def error(self, message: str) -> NoReturn:
        raise HarnessError(f"{message} (see `{self.prog} --help`)")
