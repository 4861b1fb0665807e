"""`run_eval.py --config FILE|RECIPE [options]`: each run the file holds, then (for a recipe) the paper's table.

Every run's words are checked before the first one starts, so a bad value anywhere in the file stops the command
with one line and nothing sent or written.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.cli.config_file import load, recipe_names
from harness.cli.options import run_parser
from harness.cli.summary import print_dry_run_total
from harness.types import HarnessError

Execute = Callable[[argparse.Namespace], tuple[int, list[Path], Path | None]]


def list_recipes() -> int:
    """`--config list`: every bundled recipe with its title."""
    import tomllib

    from harness.cli.config_file import RECIPES

    for name in recipe_names():
        recipe = tomllib.loads((RECIPES / f"{name}.toml").read_text(encoding="utf-8")).get("recipe", {})
        print(f"{name:<24} {recipe.get('title', '')}")
    return 0


def parse_runs(name: str, command_line: Sequence[str]) -> tuple[list[argparse.Namespace], str | None]:
    """The namespaces of every run in the file (the command line over it), and its published source."""
    parser = run_parser()
    file = load(name, parser, command_line)
    parsed = []
    for words in file.runs:
        try:  # the file's own words alone first, so that a bad value in it is reported as the file's
            in_file = any(w == "--model" or w.startswith("--model=") for w in words)
            run_parser().parse_args([*words, *([] if in_file else ["--model", "?"])])
        except HarnessError as e:
            raise HarnessError(f"--config {name}: {e}") from None
        if not in_file and not any(w == "--model" or w.startswith("--model=") for w in command_line):
            raise HarnessError(f"--config {name} names no model: add --model MODEL (a comma list for several)")
        parsed.append(parser.parse_args([*words, "--config", name, *command_line]))
    return parsed, file.source


def run_config_file(name: str, command_line: Sequence[str], execute: Execute) -> int:
    """Run each of the file's runs in order; a recipe ends with its table, the paper's numbers beside ours."""
    if name == "list":
        return list_recipes()
    runs, source = parse_runs(name, command_line)
    code, html = 0, None
    run_dirs: list[Path] = []
    for args in runs:
        status, dirs, html = execute(args)
        code, run_dirs = max(code, status), run_dirs + dirs
    if source is None and len(runs) == 1:
        if html is not None:
            print(f"html: {html.resolve()}")  # the sweep's page, the last line
        return code
    from harness.reporting.published import load_published
    from harness.reporting.recipe import recipe_table
    from harness.reporting.report import write_report
    from harness.results.write import write_atomic

    dry = bool(runs[0].dry_run)  # no report then: the dry runs' folders hold estimates, not results
    if len(runs) > 1 and not dry:  # several runs: one report over all of them (a single sweep has its own already)
        stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
        html = write_report(run_dirs, Path(runs[0].results_dir) / f"{Path(name).stem}-{stamp}") / "index.html"
    if source is not None:
        table = recipe_table(source, run_dirs, load_published())
        print(f"\n{table}", end="")
        if html is not None and len(runs) > 1:
            write_atomic(html.parent / "recipe.md", table)
    if dry and len(runs) > 1:  # each sweep printed its own total: the whole file's last
        print_dry_run_total([_estimate(d) for d in run_dirs], f"{len(runs)} runs, {len(run_dirs)} cells")
    elif html is not None:
        print(f"html: {html.resolve()}")  # last, as after any sweep: the page to open
    return code


def _estimate(run_dir: Path) -> dict[str, Any]:
    """A dry run's tokens and cost, from the metrics.json its folder holds."""
    estimate: dict[str, Any] = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))
    return estimate
