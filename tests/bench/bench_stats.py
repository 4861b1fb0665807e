"""Time the cluster bootstrap on a C-STS-validation-sized run (2,834 items, 1,417 pairs). Not collected by pytest."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # runs from a clone without `pip install -e`

from harness.scoring.stats import bootstrap_ci, compare_paired


def main() -> None:
    rng = np.random.default_rng(0)
    n = 2834
    gold = rng.integers(1, 6, n).astype(float)
    pred = np.where(rng.random(n) < 0.2, rng.uniform(1, 5, n), np.round(gold + rng.normal(0, 2, n)))
    other = np.round(gold + rng.normal(0, 2.2, n))
    groups = np.arange(n) // 2
    for label, fn in (
        ("bootstrap_ci, 1000 resamples (Spearman + Pearson)", lambda: bootstrap_ci(pred, gold, groups, 1000)),
        ("compare_paired spearman, 2000 resamples + Williams", lambda: compare_paired(pred, other, gold, groups)),
    ):
        times = []
        for _ in range(3):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        print(f"{label}: n={n}, best of 3 {min(times):.3f}s, worst {max(times):.3f}s")


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__).parse_args()  # --help says what it times, and runs nothing
    main()
