"""Pure metric functions: correlations ×100 as in the papers, invalid and out-of-range rates."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from harness.scoring.parsing import in_range
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
    # Fewer than two items: pearson says None (ranking zero or one item is harmless).
    return pearson(_rank(np.asarray(x, dtype=float)), _rank(np.asarray(y, dtype=float)))


MIN_N = 30  # below this a correlation is flagged with its n: its 95% CI spans tens of points


def correlation_note(pred: np.ndarray, gold: np.ndarray, valid: np.ndarray | None = None) -> str | None:
    """Why a correlation over these items could mislead, or None: "n=12", "constant predictions: all 100
    parsed as 1.0", "constant labels: all 40 are 3.0" (several joined by "; ").

    There is a note exactly when the correlation is None, rests on fewer than MIN_N items, or when more than
    half the predictions are one value ("near-constant predictions: 124 of 200 (62%) are 3.0"): the correlation
    then ranks only the minority against one block of ties, and a model that answers "3" whatever it reads
    (Qwen2.5-Coder-0.5B on STS-B, issue 42) still gets a number that looks like any other.
    """
    n = len(pred)
    notes = [f"n={n}"] if n < MIN_N else []
    if (value := _constant(pred)) is not None:
        how = "parsed as" if valid is not None and bool(np.all(valid)) else "equal to"
        notes.append(f"constant predictions: all {n} {how} {value}")
    elif (mode := _majority(pred)) is not None:
        value, count = mode
        notes.append(f"near-constant predictions: {count} of {n} ({100 * count / n:.0f}%) are {value}")
    if (value := _constant(gold)) is not None:
        notes.append(f"constant labels: all {n} are {value}")
    return "; ".join(notes) or None


def _majority(v: np.ndarray) -> tuple[float, int] | None:
    """The value more than half the items share, with their count, else None."""
    if len(v) < 3:  # two items are either constant or all different
        return None
    values, counts = np.unique(v, return_counts=True)
    top = int(counts.argmax())
    return (float(values[top]), int(counts[top])) if 2 * counts[top] > len(v) else None


def _constant(v: np.ndarray) -> float | None:
    """The one value of two or more items that are all equal, else None."""
    if len(v) < 2:
        return None
    lo, hi = float(v.min()), float(v.max())
    return lo if lo == hi else None


def _correlations(
    out: dict[str, Any], suffix: str, pred: np.ndarray, gold: np.ndarray, valid: np.ndarray | None
) -> None:
    """spearman<suffix>, pearson<suffix> and, where they could mislead, their <metric>_note siblings."""
    note = correlation_note(pred, gold, valid)
    for name, corr in (("spearman", spearman), ("pearson", pearson)):
        out[f"{name}{suffix}"] = corr(pred, gold)
        if note is not None:
            out[f"{name}{suffix}_note"] = note


def mse(pred: np.ndarray, gold: np.ndarray) -> float:
    """Mean squared error of the predictions against the labels."""
    return float(np.mean((pred - gold) ** 2))


@dataclass(frozen=True)
class Metric:
    """One more number of a run, over its labelled answers (fallback draws included, as the paper's Spearman):
    in metrics.json, on the run's summary line and in the report's "More metrics" section."""

    compute: Callable[[np.ndarray, np.ndarray], float | None]  # (predictions, labels) -> the number (None: undefined)
    title: str  # as the report names it
    # Compares predictions with labels on the labels' own scale: left out where predictions are cosines (qa-embed),
    # and flagged where out-of-range predictions are in it.
    label_scale: bool = False


# One entry per metric beyond the correlations and invalid rates: its metrics.json key -> its description.
METRICS: dict[str, Metric] = {
    "mse": Metric(mse, "mean squared error", label_scale=True),
}


def compute_metrics(
    samples: Sequence[Scored],
    label_range: tuple[float, float],
    *,
    on_label_scale: bool = True,
    strict: bool = False,
) -> dict[str, Any]:
    """Headline numbers of a run; correlations only over samples that have a label and a prediction.

    `on_label_scale=False` (qa-embed: cosine similarities) leaves out MSE, which compares predictions with
    labels on the labels' own scale. `strict` adds the `--parse strict` set (*_strict), never replacing
    the paper's numbers.
    """
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
        "reasons": dict(sorted(Counter(s.reason for s in samples if s.reason is not None).items())),
    }
    if strict:
        invalid_strict = sum(s.parsed_strict is None for s in answered)
        out |= {"invalid_strict": invalid_strict, "invalid_strict_pct": 100.0 * invalid_strict / n if n else None}
    labelled = [s for s in answered if s.label is not None]
    if not labelled:
        return out  # C-STS test: labels are hidden, so no correlations
    pred = np.array([s.prediction for s in labelled], dtype=float)
    gold = np.array([s.label for s in labelled], dtype=float)
    valid = np.array([s.valid for s in labelled], dtype=bool)
    out["n_labelled"] = len(labelled)
    _correlations(out, "", pred, gold, valid)
    for name, metric in METRICS.items():
        if metric.label_scale and not on_label_scale:
            continue
        out[name] = metric.compute(pred, gold)
        if metric.label_scale and out_of_range:  # one reply of "1000000" makes an error about that reply alone
            out[f"{name}_note"] = f"includes {out_of_range} out-of-range predictions"
    out["n_valid"] = int(valid.sum())
    _correlations(out, "_valid", pred[valid], gold[valid], valid[valid])
    if strict:
        pred_strict = np.array([s.prediction_strict for s in labelled], dtype=float)
        valid_strict = np.array([s.parsed_strict is not None for s in labelled], dtype=bool)
        out["n_valid_strict"] = int(valid_strict.sum())
        _correlations(out, "_strict", pred_strict, gold, valid_strict)
    return out


def shown(value: object) -> str:
    """A metric as the printed lines show it: a float to two decimals."""
    return f"{value:.2f}" if isinstance(value, float) else str(value)


MARKS = ("†", "‡", "§", "¶")  # one per distinct note on a line, as the report's tables mark a flagged number


def metrics_line(m: dict[str, Any], keys: Sequence[str]) -> str:
    """`key=value` pairs; a number that could mislead is marked and its note said once, after them:
    `spearman=12.30†  pearson=11.80†  († n=12)`. Spearman and Pearson over the same items share their note (and
    the valid-only pair often the same one again): said beside each, one run's line repeated it four times."""
    parts, notes = [], dict[str, str]()  # note -> its mark, in order of first use
    for k in keys:
        if k in m:
            note = m.get(f"{k}_note")
            if note and note not in notes:
                notes[note] = MARKS[len(notes)] if len(notes) < len(MARKS) else f"[{len(notes) + 1}]"
            mark = notes[note] if note else ""
            parts.append(f"{k}={shown(m[k])}{mark}")
    legend = "; ".join(f"{mark} {note}" for note, mark in notes.items())
    return "  ".join(parts) + (f"  ({legend})" if legend else "")
