"""`run_eval.py batches`: list the batches submitted with --batch (reads the cache file; calls no API)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from harness.calling.batch.listing import list_batches
from harness.cli.options import Parser
from harness.config.settings import RunConfig


def batches_parser() -> Parser:
    p = Parser(
        prog="run_eval.py batches",
        description="List the batches submitted with --batch: pending, finished, expired, with their counts. "
        "Status is as last polled; rerun the evaluation command to poll and collect.",
    )
    p.add_argument(
        "--results-dir", type=Path, default=RunConfig.results_dir, help="the folder whose cache.sqlite is read"
    )
    p.add_argument("--cache", type=Path, help="the response cache file (default: RESULTS_DIR/cache.sqlite)")
    return p


def cmd_batches(argv: Sequence[str]) -> int:
    a = batches_parser().parse_args(argv)
    print(list_batches(a.cache or a.results_dir / "cache.sqlite"), end="")
    return 0
