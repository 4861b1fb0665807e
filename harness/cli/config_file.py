"""--config FILE.toml (or a bundled recipe's name): a run, a sweep or a paper's table as a file.

The file's keys are the run command's long options without `--` (`max-tokens`, or `max_tokens`); values are what
the option takes: a string or a number, true/false for a switch (`dry-run = true`; `chat = false` is `--no-chat`),
a list for a sweep option (`shots = [0, 2, 4]`) or a repeatable one (`stop = ["\\n"]`). The file becomes command
line words placed before the real command line, so argparse checks every value as it checks typed ones and a
typed option overrides the file's (a repeatable one replaces the file's list instead of adding to it). So the
resolved configuration is what config.json records (its `settings`, with `config_file` naming the file).

A file may also hold `[[runs]]`: several runs (or sweeps), each a table of options over the top-level ones, and
`[recipe]`: `title` and `source` (paper_results.csv's source column), printed with the published table beside
the user's numbers at the end (harness/reporting/recipe.py). Recipes ship in harness/recipes/*.toml.
"""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.cli.declared import CommaList
from harness.cli.parser import Option, Parser
from harness.inputs import read_text
from harness.sweep import GRID_FIELDS
from harness.types import HarnessError

RECIPES = Path(__file__).parents[1] / "recipes"
MAX_CONFIG_BYTES = 2**20  # a recipe is a few kilobytes; a megabyte of settings is a mistake, not a run
TABLES = ("runs", "recipe")  # the file's own tables, beside the options


@dataclass(frozen=True)
class ConfigFile:
    """A --config file read and checked: command-line words for each run it holds, and its recipe table."""

    name: str  # as given: a path, or a recipe's name
    runs: tuple[tuple[str, ...], ...]  # words per run, before the command line's
    title: str | None = None
    source: str | None = None  # published source (Deshpande et al. 2023, Table 11 ...)


def recipe_names() -> list[str]:
    """The bundled recipes, by name."""
    return sorted(p.stem for p in RECIPES.glob("*.toml"))


def split_config(argv: Sequence[str]) -> tuple[str | None, list[str]]:
    """(the --config value or None, the command line without it)."""
    rest, value, i = [], None, 0
    while i < len(argv):
        word = argv[i]
        if word == "--config":
            if i + 1 >= len(argv):
                raise HarnessError("argument --config: expected one argument (see `run_eval.py --help`)")
            value, i = argv[i + 1], i + 2
            continue
        if word.startswith("--config="):
            value = word.split("=", 1)[1]
        else:
            rest.append(word)
        i += 1
    return value, rest


def locate(name: str) -> Path:
    """A file path as given, else a bundled recipe of that name; one line naming the recipes otherwise."""
    path = Path(name).expanduser()
    if path.exists() or name.endswith(".toml") or "/" in name:
        if not path.exists():
            raise HarnessError(f"--config: no such file {name}")
        return path  # a FIFO or a folder there: read_text says what it is
    if name in recipe_names():
        return RECIPES / f"{name}.toml"
    close = difflib.get_close_matches(name, recipe_names(), n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise HarnessError(f"--config: no file and no recipe named {name!r}: {hint}recipes are {', '.join(recipe_names())}")


def load(name: str, parser: Parser, command_line: Sequence[str]) -> ConfigFile:
    """Read and check the file; the words of each of its runs, leaving out the options the command line sets."""
    path = locate(name)
    text = read_text(path, "--config file", MAX_CONFIG_BYTES)  # a FIFO refused, the size bounded (harness/inputs.py)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise HarnessError(f"--config {path}: not valid TOML: {e}") from None
    except RecursionError:  # tomllib reads nested arrays and tables by recursion: 3,000 levels end it
        raise HarnessError(f"--config {path}: nested deeper than a TOML reader goes") from None
    options = {o.action.option_strings[0].removeprefix("--"): o for o in parser.options}
    options.pop("config")
    typed = _given(command_line, parser.options)
    recipe = data.pop("recipe", {})
    runs = data.pop("runs", [{}])
    if not isinstance(recipe, dict) or not set(recipe) <= {"title", "source", "note"}:
        raise HarnessError(f"--config {path}: [recipe] takes title, source and note")
    if not isinstance(runs, list) or not runs or not all(isinstance(r, dict) for r in runs):
        raise HarnessError(f"--config {path}: runs must be a non-empty list of tables ([[runs]])")
    if recipe.get("source"):  # a paper's table: its settings are the paper's, not to be typed over
        _refuse_overrides(name, path, [data, *runs], options, typed)
    words = tuple(
        tuple(_words({**data, **run}, options, typed, f"{path}" + (f" runs[{i}]" if len(runs) > 1 else "")))
        for i, run in enumerate(runs)
    )
    return ConfigFile(str(name), words, recipe.get("title"), recipe.get("source"))


def _refuse_overrides(
    name: str, path: Path, tables: Sequence[dict[str, Any]], options: dict[str, Option], typed: set[str]
) -> None:
    """A recipe run with a typed option over one of the recipe's own (another dataset, another template) would
    print other numbers under the paper's table: one line saying so, before anything runs."""
    for table in tables:
        for raw_key, value in table.items():
            option = options.get(raw_key.replace("_", "-"))
            if option is not None and option.action.dest in typed:
                flag = option.action.option_strings[0]
                raise HarnessError(
                    f"--config {name}: {flag} contradicts the recipe's {raw_key} = {value!r}, the setting of the "
                    f"paper's table; leave {flag} out, or copy {path} to a file of your own"
                )


def _given(command_line: Sequence[str], options: Sequence[Option]) -> set[str]:
    """Dests of the options typed on the command line (these replace the file's values)."""
    by_string = {s: o.action.dest for o in options for s in o.action.option_strings}
    return {by_string[w.split("=", 1)[0]] for w in command_line if w.split("=", 1)[0] in by_string}


def _words(table: dict[str, Any], options: dict[str, Option], typed: set[str], where: str) -> list[str]:
    out: list[str] = []
    for raw_key, value in table.items():
        key = raw_key.replace("_", "-")
        option = options.get(key)
        if option is None:
            known = [*options, *TABLES]
            close = difflib.get_close_matches(key, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise HarnessError(f"--config {where}: unknown key {raw_key!r}{hint}; keys are the run options without --")
        if option.action.dest in typed:
            continue  # the command line's value wins
        out += _option_words(key, option, value, where)
    return out


def _option_words(key: str, option: Option, value: Any, where: str) -> list[str]:
    flag = f"--{key}"
    if option.kind in ("store_true", "boolean"):
        if not isinstance(value, bool):
            raise HarnessError(f"--config {where}: {key} must be true or false, got {value!r}")
        if option.kind == "boolean":
            return [flag if value else f"--no-{key}"]
        return [flag] if value else []
    if isinstance(value, list) and option.kind == "append":
        return [w for item in value for w in (flag, _scalar(key, item, where))]
    if isinstance(value, list) and isinstance(option.action.type, CommaList):  # a sweep's option
        if not value:
            raise HarnessError(f"--config {where}: {key} is an empty list")
        return [flag, ",".join(_scalar(key, item, where) for item in value)]
    if isinstance(value, list):
        raise HarnessError(f"--config {where}: {key} takes one value, not a list (lists: {', '.join(GRID_FIELDS)})")
    return [flag, _scalar(key, value, where)]


def _scalar(key: str, value: Any, where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise HarnessError(f"--config {where}: {key} must be a string or a number, got {str(value)[:80]!r}")
    if isinstance(value, str) and "\0" in value:  # no command line can hold one, and no path: a path cut short there
        raise HarnessError(f"--config {where}: {key} holds a NUL character (\\u0000)")
    return str(value)
