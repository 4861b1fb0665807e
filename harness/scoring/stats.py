"""Uncertainty, vectorised: cluster bootstrap CIs, paired comparisons, dependent-correlation tests. Pure functions."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from harness.scoring.metrics import pearson, spearman

_CHUNK = 250  # resamples drawn at a time: bounds memory at a few B×n float arrays (and fixes the random stream)
_ROWS = 25  # resamples computed at a time: B×n temporaries small enough to stay in cache and be reused


def _row_blocks(w: np.ndarray) -> list[np.ndarray]:
    """Views of at most _ROWS resamples. Every statistic here is row by row (sums along the contiguous axis), so
    a block gives each row exactly the numbers the whole chunk would."""
    return [w[i : i + _ROWS] for i in range(0, len(w), _ROWS)]


@dataclass(frozen=True)
class Interval:
    """A point estimate with a percentile interval (×100, like the metrics)."""

    estimate: float | None
    low: float | None
    high: float | None


@dataclass(frozen=True)
class PairedResult:
    """A − B on the same items: the difference, its bootstrap CI and two-sided p-values."""

    n: int
    a: float | None
    b: float | None
    diff: float | None
    low: float | None
    high: float | None
    p_bootstrap: float | None
    p_williams: float | None


def cluster_ids(groups: Sequence[object]) -> np.ndarray:
    """Map group labels to 0..G-1; items sharing a label are resampled together."""
    _, inverse = np.unique(np.asarray([str(g) for g in groups]), return_inverse=True)
    return inverse.ravel()


def resample_weights(clusters: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """B×n item weights: how often each item's cluster was drawn (a bootstrap of clusters, not items)."""
    n_clusters = int(clusters.max()) + 1 if len(clusters) else 0
    drawn = rng.integers(0, n_clusters, size=(n_resamples, n_clusters))
    # Count draws per (resample, cluster) in one bincount: several times faster than rng.multinomial.
    flat = (drawn + np.arange(n_resamples)[:, None] * n_clusters).ravel()
    counts = np.bincount(flat, minlength=n_resamples * n_clusters).reshape(n_resamples, n_clusters)
    return counts[:, clusters].astype(float)


def weighted_pearson(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Row-wise Pearson ×100 of x and y (each 1-D or B×n) under B×n weights; NaN where undefined."""
    # Each product is made once and reused (w*x*x is (w*x)*x, as Python evaluates it): the same numbers, bit for
    # bit, with fewer passes over B×n arrays.
    total = w.sum(axis=1, keepdims=True)
    wx, wy = w * x, w * y
    mx = wx.sum(axis=1, keepdims=True) / total
    my = wy.sum(axis=1, keepdims=True) / total
    dx, dy = x - mx, y - my
    wdx, wdy = w * dx, w * dy
    cov = (wdx * dy).sum(axis=1)
    vx, vy = (wdx * dx).sum(axis=1), (wdy * dy).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = 100.0 * cov / np.sqrt(vx * vy)
    # A constant resample has zero variance up to rounding of the mean: undefined, like metrics.pearson.
    defined = (vx > 1e-20 * (wx * x).sum(axis=1)) & (vy > 1e-20 * (wy * y).sum(axis=1))
    return np.where(defined, r, np.nan)


def weighted_ranks(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Average ranks of each item within each weighted resample (ties share a rank), B×n."""
    order = np.argsort(x, kind="mergesort")
    xs = x[order]
    starts = np.flatnonzero(np.r_[True, xs[1:] != xs[:-1]])
    tie_of_sorted = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(xs)]))
    tie = np.empty(len(x), dtype=int)
    tie[order] = tie_of_sorted
    per_value = np.add.reduceat(w[:, order], starts, axis=1)  # B×U: copies drawn of each distinct value
    below = np.cumsum(per_value, axis=1) - per_value
    rank_of_value = below + (per_value + 1.0) / 2.0
    return rank_of_value[:, tie]


def bootstrap_weights(
    n: int, groups: Sequence[object] | None, n_resamples: int, seed: int
) -> tuple[np.ndarray, np.random.Generator]:
    """Cluster ids for n items (each its own cluster when groups is None) and a seeded generator."""
    clusters = np.arange(n) if groups is None else cluster_ids(groups)
    return clusters, np.random.default_rng(seed)


def bootstrap_ci(
    pred: Sequence[float],
    gold: Sequence[float],
    groups: Sequence[object] | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, Interval]:
    """Percentile CIs for Spearman and Pearson; `groups` resamples clusters (C-STS: both conditions of a pair)."""
    x, y = np.asarray(pred, dtype=float), np.asarray(gold, dtype=float)
    point = {"spearman": spearman(x.tolist(), y.tolist()), "pearson": pearson(x.tolist(), y.tolist())}
    if len(x) < 3:
        return {k: Interval(v, None, None) for k, v in point.items()}
    clusters, rng = bootstrap_weights(len(x), groups, n_resamples, seed)
    draws: dict[str, list[np.ndarray]] = {"spearman": [], "pearson": []}
    for start in range(0, n_resamples, _CHUNK):
        for w in _row_blocks(resample_weights(clusters, min(_CHUNK, n_resamples - start), rng)):
            draws["pearson"].append(weighted_pearson(x, y, w))
            draws["spearman"].append(weighted_pearson(weighted_ranks(x, w), weighted_ranks(y, w), w))
    tail = 100.0 * (1.0 - level) / 2.0
    out = {}
    for name, parts in draws.items():
        values = np.concatenate(parts)
        values = values[np.isfinite(values)]
        if point[name] is None or len(values) == 0:
            out[name] = Interval(point[name], None, None)
            continue
        lo, hi = np.percentile(values, [tail, 100.0 - tail])
        out[name] = Interval(point[name], float(lo), float(hi))
    return out


def paired_bootstrap(
    pred_a: Sequence[float],
    pred_b: Sequence[float],
    gold: Sequence[float],
    groups: Sequence[object] | None = None,
    metric: str = "spearman",
    n_resamples: int = 2000,
    seed: int = 0,
) -> tuple[float | None, float | None, float | None]:
    """(CI low, CI high, two-sided p) of metric(A) − metric(B), both scored on the same resampled items."""
    a, b, y = (np.asarray(v, dtype=float) for v in (pred_a, pred_b, gold))
    if len(y) < 3:
        return None, None, None
    clusters, rng = bootstrap_weights(len(y), groups, n_resamples, seed)
    diffs = []
    for start in range(0, n_resamples, _CHUNK):
        for w in _row_blocks(resample_weights(clusters, min(_CHUNK, n_resamples - start), rng)):
            if metric == "spearman":
                ry = weighted_ranks(y, w)
                ra, rb = weighted_ranks(a, w), weighted_ranks(b, w)
                diffs.append(weighted_pearson(ra, ry, w) - weighted_pearson(rb, ry, w))
            else:
                diffs.append(weighted_pearson(a, y, w) - weighted_pearson(b, y, w))
    d = np.concatenate(diffs)
    d = d[np.isfinite(d)]
    if len(d) == 0:
        return None, None, None
    lo, hi = np.percentile(d, [2.5, 97.5])
    # Two-sided percentile p-value: how often the resampled difference falls on the other side of 0.
    tail = min(np.sum(d <= 0), np.sum(d >= 0))
    p = min(1.0, 2.0 * (tail + 1) / (len(d) + 1))
    return float(lo), float(hi), float(p)


def williams_t(r12: float, r13: float, r23: float, n: int) -> float | None:
    """Williams' t (Steiger 1980, eq. 3) for r12 vs r13 sharing variable 1, with n - 3 degrees of freedom; r as
    fractions. None when n < 4 or the correlations are not those of any data (|R| makes the variance <= 0)."""
    if n < 4:
        return None
    det = 1 - r12**2 - r13**2 - r23**2 + 2 * r12 * r13 * r23  # |R|, the 3x3 correlation matrix's determinant
    rbar = (r12 + r13) / 2
    denom = 2 * (n - 1) / (n - 3) * det + rbar**2 * (1 - r23) ** 3
    if denom <= 0:
        return None
    return (r12 - r13) * math.sqrt((n - 1) * (1 + r23) / denom)


def williams_test(r12: float, r13: float, r23: float, n: int) -> float | None:
    """Two-sided p of Williams' t (Steiger 1980, eq. 3) for r12 vs r13 sharing variable 1; r as fractions."""
    from scipy.stats import t as student_t

    t = williams_t(r12, r13, r23, n)
    if t is None:
        return None
    return float(2 * student_t.sf(abs(t), n - 3))


def compare_paired(
    pred_a: Sequence[float],
    pred_b: Sequence[float],
    gold: Sequence[float],
    groups: Sequence[object] | None = None,
    metric: str = "spearman",
    n_resamples: int = 2000,
    seed: int = 0,
) -> PairedResult:
    """Paired comparison of two runs on the same items: cluster bootstrap and Williams' test (on ranks for Spearman)."""
    corr = spearman if metric == "spearman" else pearson
    ra, rb, rab = corr(pred_a, gold), corr(pred_b, gold), corr(pred_a, pred_b)
    lo, hi, p_boot = paired_bootstrap(pred_a, pred_b, gold, groups, metric, n_resamples, seed)
    p_w = None
    if ra is not None and rb is not None and rab is not None:
        # Williams assumes independent items; with C-STS pairs it is a little optimistic, hence the bootstrap too.
        p_w = williams_test(ra / 100, rb / 100, rab / 100, len(gold))
    diff = ra - rb if ra is not None and rb is not None else None
    return PairedResult(len(gold), ra, rb, diff, lo, hi, p_boot, p_w)


def p_against(estimate: float | None, low: float | None, high: float | None, value: float) -> float | None:
    """Two-sided p that a correlation (×100) with this 95 % percentile interval equals `value`, a published number
    taken as fixed: a normal approximation in Fisher's z (atanh), its standard error read off the interval's width,
    so that the test resamples as the interval did (C-STS: whole sentence pairs). None where it is undefined (no
    interval, a correlation of ±100)."""
    from scipy.stats import norm

    if estimate is None or low is None or high is None or not all(abs(v) < 100 for v in (estimate, low, high, value)):
        return None
    se = (math.atanh(high / 100) - math.atanh(low / 100)) / (2 * float(norm.ppf(0.975)))
    if not se > 0:
        return None
    z = (math.atanh(estimate / 100) - math.atanh(value / 100)) / se
    return float(2 * norm.sf(abs(z)))


def fallback_spread(
    pred: Sequence[float], gold: Sequence[float], invalid: Sequence[bool], draws: np.ndarray
) -> dict[str, tuple[float | None, float | None]]:
    """Mean and sd of Spearman/Pearson when the invalid items' fallback draws are redrawn (draws: S×n_invalid)."""
    x, y = np.asarray(pred, dtype=float), np.asarray(gold, dtype=float)
    mask = np.asarray(invalid, dtype=bool)
    draws = np.asarray(draws, dtype=float).reshape(-1, int(mask.sum()))
    values: dict[str, list[float]] = {"spearman": [], "pearson": []}
    for row in draws:
        xs = x.copy()
        xs[mask] = row
        for name, corr in (("spearman", spearman), ("pearson", pearson)):
            v = corr(xs.tolist(), y.tolist())
            if v is not None:
                values[name].append(v)
    out: dict[str, tuple[float | None, float | None]] = {}
    for name, vs in values.items():
        if not vs:
            out[name] = (None, None)
        else:
            arr = np.asarray(vs)
            out[name] = (float(arr.mean()), float(arr.std(ddof=1)) if len(arr) > 1 else 0.0)
    return out


SMALL_N = 500  # below this a run's correlation is shown with the range chance alone reaches at its n


def chance_band(n: int) -> float | None:
    """The correlation ×100 that independent predictions and labels exceed in absolute value 1 time in 20 at n
    items: the two-sided 5 % critical value of Pearson's r under independence, r = t / sqrt(n - 2 + t^2) with t
    the Student t quantile on n - 2 degrees of freedom (about the same for Spearman). The random baseline gave
    Spearman -18.19 at n=100, inside this band (19.66); None below 3 items."""
    if n < 3:
        return None
    from scipy.stats import t as student_t  # deferred: scipy's import is only paid where a run is reported

    q = float(student_t.ppf(0.975, n - 2))
    return 100.0 * q / math.sqrt(n - 2 + q * q)


def small_run_note(n: int, spearman: float | None) -> str | None:
    """The note a correlation from few items carries where it is shown, or None (enough items, or none)."""
    if n >= SMALL_N or spearman is None:  # checked first: the band's scipy import is paid only by small runs
        return None
    band = chance_band(n)
    if band is None:
        return None
    return (
        f"n={n} is a small run: a correlation within ±{band:.1f} of zero arises by chance alone at this n "
        f"(1 time in 20 with random predictions), so Spearman {spearman:.2f} "
        + ("cannot be told from zero" if abs(spearman) < band else "is only roughly known")
    )
