"""Pure metric functions: correlations ×100 as in the papers, invalid and out-of-range rates."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from harness.parsing import in_range
from harness.types import Scored


def _rank(x: np.ndarray) -> np.ndarray:
    """Average ranks with ties shared (what Spearman needs), without importing scipy.stats."""
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x), dtype=float)
    sorted_x = x[order]
    # Boundaries of runs of equal values; every member of a run gets the run's mean rank.
    starts = np.flatnonzero(np.r_[True, sorted_x[1:] != sorted_x[:-1]])
    ends = np.r_[starts[1:], len(x)]
    mean_rank = (starts + ends - 1) / 2.0 + 1.0
    ranks[order] = np.repeat(mean_rank, ends - starts)
    return ranks


def pearson(x: ArrayLike, y: ArrayLike) -> float | None:
    """Pearson r ×100; None when undefined (fewer than two points or a constant side)."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(a) < 2:
        return None
    a, b = a - a.mean(), b - b.mean()
    denom = math.sqrt(float(a @ a) * float(b @ b))
    if denom == 0.0:
        return None
    return 100.0 * float(a @ b) / denom


def spearman(x: ArrayLike, y: ArrayLike) -> float | None:
    """Spearman rho ×100 (Pearson of average ranks); None when undefined."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(a) < 2:
        return None
    return pearson(_rank(a), _rank(b))


def compute_metrics(samples: Sequence[Scored], label_range: tuple[float, float]) -> dict[str, Any]:
    """Headline numbers of a run; correlations only over samples that have a label and a prediction."""
    answered = [s for s in samples if s.error is None and s.prediction is not None]
    n = len(answered)
    invalid = sum(not s.valid for s in answered)
    out_of_range = sum(s.valid and s.parsed is not None and not in_range(s.parsed, label_range) for s in answered)
    out: dict[str, Any] = {
        "n": n,
        "errors": sum(s.error is not None for s in samples),
        "invalid": invalid,
        "invalid_pct": 100.0 * invalid / n if n else None,
        "out_of_range": out_of_range,
        "out_of_range_pct": 100.0 * out_of_range / n if n else None,
    }
    labelled = [s for s in answered if s.label is not None]
    if not labelled:
        return out  # C-STS test: labels are hidden, so no correlations
    pred = np.array([s.prediction for s in labelled], dtype=float)
    gold = np.array([s.label for s in labelled], dtype=float)
    valid = np.array([s.valid for s in labelled], dtype=bool)
    out |= {
        "n_labelled": len(labelled),
        "spearman": spearman(pred, gold),
        "pearson": pearson(pred, gold),
        "mse": float(np.mean((pred - gold) ** 2)),
        "n_valid": int(valid.sum()),
        "spearman_valid": spearman(pred[valid], gold[valid]),
        "pearson_valid": pearson(pred[valid], gold[valid]),
    }
    return out
