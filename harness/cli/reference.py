"""docs/options.md, generated from the parsers: `python -m harness.cli.reference` rewrites it, and
tests/docs/test_docs.py fails while the file differs from what this writes (an option added, renamed, re-worded)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.cli.parser import Option, Parser

DOCS_OPTIONS = Path(__file__).parents[2] / "docs" / "options.md"


def _parsers() -> list[tuple[str, Parser]]:
    from harness.cli.batches import batches_parser
    from harness.cli.compare_cmd import compare_parser
    from harness.cli.errors import errors_parser
    from harness.cli.main import data_report_parser, extract_parser, overlap_parser
    from harness.cli.options import run_parser
    from harness.cli.reannotate import reannotate_parser
    from harness.cli.report_cmd import report_parser

    return [
        ("run (the default command)", run_parser()),
        ("extract", extract_parser()),
        ("data-report", data_report_parser()),
        ("overlap", overlap_parser()),
        ("report", report_parser()),
        ("compare", compare_parser()),
        ("batches", batches_parser()),
        ("errors", errors_parser()),
        ("reannotate", reannotate_parser()),
    ]


def _cell(text: object) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _default(action: argparse.Action) -> str:
    default = action.default
    if default is None or default is False or default == [] or default is argparse.SUPPRESS:
        return ""
    return f"`{default}`"


def _expand(action: argparse.Action) -> str:
    """The help text as --help prints it: %(default)g, %(choices)s and %% filled in by argparse's own rule."""
    params = {k: v for k, v in vars(action).items() if v is not argparse.SUPPRESS}
    if params.get("choices") is not None:
        params["choices"] = ", ".join(map(str, params["choices"]))
    return (action.help or "") % (params | {"prog": "run_eval.py"})


def _row(option: Option) -> str:
    action = option.action
    metavar = action.metavar or (action.dest.upper() if option.kind in ("store", "append") else "")
    if isinstance(metavar, tuple):
        metavar = " ".join(metavar)
    value = f" {metavar}" if metavar and option.kind in ("store", "append") else ""
    names = ", ".join(f"`{s}{value}`" for s in action.option_strings)
    choices = action.choices or getattr(action.type, "choices", ())
    help_text = _expand(action)
    if choices and "{" not in value:
        help_text += f" (one of: {', '.join(map(str, choices))})"
    return f"| {_cell(names)} | {_default(action)} | {_cell(help_text)} |"


def render() -> str:
    """The whole page."""
    out = [
        "# Options",
        "",
        "Generated from the parsers by `python -m harness.cli.reference` (a test fails while this file is stale).",
        "Every option of a run can also be set in a `--config` file ([running.md](running.md#runs-as-files"
        "---config-and-the-papers-tables)).",
    ]
    for title, parser in _parsers():
        out += ["", f"## {title}", "", "```", parser.format_usage().strip(), "```"]
        groups: dict[str | None, list[Option]] = {}
        for option in parser.options:
            groups.setdefault(option.group, []).append(option)
        for group, options in groups.items():
            if group is not None:
                out += ["", f"### {group}"]
            out += ["", "| option | default | meaning |", "| --- | --- | --- |", *map(_row, options)]
        if title.startswith("run "):  # the options made from RunConfig's declarations
            out += _marks()
    return "\n".join(out) + "\n"


def _marks() -> list[str]:
    """What each run option changes: its declaration's `affects=` marks (harness/config/option.py `Affects`), from
    which the response-cache key, the run's identity, the shard merge and the comparability judgement are made."""
    from harness.config.option import Affects, declared
    from harness.config.settings import RunConfig

    out = [
        "",
        "### What each option changes",
        "",
        "Each option's declaration says what it changes, and every key the harness keeps is made from that "
        "([running.md](running.md#what-each-setting-changes-and-the-keys-made-from-it)): "
        "REQUEST (the request sent: the response-cache key), READING (how a reply is read, scored or kept), "
        "ITEMS (which items are scored), PUBLISHED (judged against the paper's: [comparability.md](comparability.md)), "
        "PRESENTATION or OPERATION (no key: what is shown or where, how the run is carried out).",
        "",
        "| option | changes |",
        "| --- | --- |",
    ]
    for d in declared(RunConfig):
        marks = d.option.affects or Affects(0)
        out.append(f"| `{d.flag}` | {', '.join(m.name or '' for m in Affects if m in marks) or 'not declared'} |")
    return out


if __name__ == "__main__":
    DOCS_OPTIONS.write_text(render(), encoding="utf-8")
    sys.stdout.write(f"wrote {DOCS_OPTIONS}\n")
