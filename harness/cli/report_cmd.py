"""`run_eval.py report`: tables, plots and the page from run or sweep folders; --shareable leaves C-STS text out."""

from __future__ import annotations

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
        help="report folder (default: SWEEP/report for one sweep, FOLDER/report-TIME for one folder of runs, "
        "else results/report-TIME)",
    )
    p.add_argument("--published", type=Path, help="published numbers CSV (default: the bundled paper_results.csv)")
    p.add_argument(
        "--shareable",
        action="store_true",
        help="leave C-STS prompts, replies and thoughts out of the page (the release terms forbid sharing them); "
        "the tables, plots and numbers are the same (default folder: report-shareable)",
    )
    return p


def cmd_report(argv: Sequence[str]) -> int:
    from datetime import UTC, datetime

    from harness.reporting.published import load_published
    from harness.reporting.report import write_report

    a = report_parser().parse_args(argv)
    if a.published is not None:
        check_regular(a.published, "--published")
    out = a.out
    if out is None:
        kind = "report-shareable" if a.shareable else "report"
        stamp = datetime.now(UTC).strftime(f"{kind}-%Y%m%d-%H%M%S")
        one = a.paths[0] if len(a.paths) == 1 else None
        if one is not None and (one / "sweep.json").is_file():
            out = one / kind
        elif one is not None and one.is_dir() and not (one / "config.json").is_file():
            out = one / stamp  # a folder of run folders (results/): the report goes beside them
        else:
            out = RunConfig.results_dir / stamp
    check_output(out, "report folder", directory=True)
    out_dir = write_report(a.paths, out, load_published(a.published) if a.published else None, shareable=a.shareable)
    md = (out_dir / "report.md").read_text(encoding="utf-8")
    ends = [i for i in (md.find("\n## C-STS beside"), md.find("\n## Published")) if i >= 0]
    print(md[: min(ends, default=len(md))].rstrip())
    print(f"report: {out_dir}")
    print(f"html: {(out_dir / 'index.html').resolve()}")
    return 0
