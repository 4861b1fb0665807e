"""`run_eval.py report`: tables, plots and the page from run or sweep folders; --shareable leaves C-STS text out."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from harness.cli.parser import Parser
from harness.config.settings import RunConfig
from harness.inputs import check_output, check_regular


def report_parser() -> Parser:
    p = Parser(
        prog="run_eval.py report",
        description="Tables (md/csv/tex), plots and CIs from run or sweep folders; calls no model.",
    )
    p.add_argument("paths", nargs="+", type=Path, help="run folders, sweep folders, or folders holding them (results/)")
    p.add_argument(
        "--out",
        type=Path,
        help="report folder (default: SWEEP/report for each sweep folder given, FOLDER/report-TIME for one folder of "
        "runs, else results/report-TIME)",
    )
    p.add_argument("--published", type=Path, help="published numbers CSV (default: the bundled paper_results.csv)")
    p.add_argument(
        "--shareable",
        action="store_true",
        help="leave C-STS prompts, replies and thoughts out of the page (the release terms forbid sharing them); "
        "the tables, plots and numbers are the same (default folder: report-shareable in place of report)",
    )
    return p


def cmd_report(argv: Sequence[str]) -> int:
    from harness.reporting.published import load_published
    from harness.reporting.report import write_report
    from harness.results.stage import held

    a = report_parser().parse_args(argv)
    if a.published is not None:
        check_regular(a.published, "--published")
    published = load_published(a.published) if a.published else None
    kind = "report-shareable" if a.shareable else "report"
    sweeps = all((p / "sweep.json").is_file() for p in a.paths)
    if a.out is None and sweeps:  # one sweep or several (results/sweep-*): each sweep's own report folder, rewritten
        jobs = [([p], p / kind) for p in a.paths]
    else:
        jobs = [(a.paths, a.out or _default_out(a.paths, kind))]
    for _, out in jobs:  # every folder checked before the first is written
        check_output(out, "report folder", directory=True)
    for paths, out in jobs:
        out_dir = write_report(paths, out, published, shareable=a.shareable)
        with held(out_dir):  # another report to this --out swaps its folder in before or after this read
            md = (out_dir / "report.md").read_text(encoding="utf-8")
        cut = re.search(r"\n## (?:C-STS beside|Published)", md)  # the terminal shows the tables, the rest is on file
        print((md[: cut.start()] if cut else md).rstrip())
        print(f"report: {out_dir}")
        print(f"html: {(out_dir / 'index.html').resolve()}")
    return 0


def _default_out(paths: Sequence[Path], kind: str) -> Path:
    """Where a report of these folders goes without --out: beside the runs of one folder of runs (results/),
    else results/ (a report of runs and sweeps together), named by kind and time."""
    from datetime import UTC, datetime

    stamp = datetime.now(UTC).strftime(f"{kind}-%Y%m%d-%H%M%S")
    match paths:
        case [one] if one.is_dir() and not (one / "config.json").is_file():
            return one / stamp
    return RunConfig.results_dir / stamp
