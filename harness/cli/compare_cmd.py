"""`run_eval.py compare`: paired comparisons of run folders on the items they share; three or more folders are
compared pair by pair."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path

from harness.cli.parser import Parser
from harness.types import HarnessError


def compare_parser() -> Parser:
    p = Parser(
        prog="run_eval.py compare",
        description="Paired comparison of two runs on the items both answered; of every pair, given three or more.",
    )
    p.add_argument(
        "runs", nargs="+", type=Path, metavar="RUN",
        help="run folders: A B (differences are A - B); three or more: every pair, in the order given",
    )  # fmt: skip
    p.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap")
    return p


def cmd_compare(argv: Sequence[str]) -> int:
    from harness.reporting.compare import compare_runs

    a = compare_parser().parse_args(argv)
    if a.resamples < 1:
        raise HarnessError(f"--resamples must be at least 1, got {a.resamples}")
    if len(a.runs) < 2:
        raise HarnessError(f"compare needs two run folders or more, got one: {a.runs[0]}")
    seen: dict[Path, Path] = {}
    for run in a.runs:  # the same folder twice: every difference would be 0 and every p-value 1, nothing learnt
        if (same := seen.setdefault(run.resolve(), run)) is not run:
            raise HarnessError(f"compare: {same} and {run} are the same run folder; give two different runs")
    pairs = list(itertools.combinations(a.runs, 2))
    texts = [compare_runs(run_a, run_b, a.resamples, a.seed) for run_a, run_b in pairs]  # all checked, then printed
    if len(pairs) == 1:
        print(texts[0], end="")
        return 0
    print(
        f"{len(a.runs)} run folders: {len(pairs)} pairs, each compared on the items both answered. Each p-value is "
        f"for its own pair: across {len(pairs)} pairs, one below 0.05 is expected by chance more often than 1 time "
        "in 20 (Bonferroni: compare p with 0.05 / the number of pairs)."
    )
    for i, ((run_a, run_b), text) in enumerate(zip(pairs, texts, strict=True), start=1):
        print(f"\n## pair {i} of {len(pairs)}: {run_a} − {run_b}\n")
        print(text, end="")
    return 0
