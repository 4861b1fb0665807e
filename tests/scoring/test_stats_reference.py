"""Every statistic against an implementation we did not write, or a published worked example.

- correlations: scipy.stats.pearsonr / spearmanr;
- percentile intervals: scipy.stats.bootstrap(method="percentile") drawing the same resamples (one generator
  seeded alike: scipy draws `rng.integers(0, n, (B, n))`, which is what an item bootstrap draws here);
- the paired cluster bootstrap: a brute-force loop that expands each resample into its rows and calls scipy;
- Williams' t: the depcor example that the R package cocor tests against (Silver, Hittner & May 2006:
  r.jk=.3, r.jh=.4, r.kh=.5, n=100 gives t=-1.0767, p=.2843), and a second derivation from the determinant of
  the 3x3 correlation matrix (Steiger 1980, eq. 3).

Conventions pinned here (README "Statistics"): intervals are percentile intervals at the level asked (95 % unless
said), resamples whose correlation is undefined (a constant resample) are dropped, and the bootstrap p-value is
two-sided with the +1 of Davison & Hinkley: p = min(1, 2 (min(#d<=0, #d>=0) + 1) / (B + 1)).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats as sps

from harness.scoring.metrics import pearson, spearman
from harness.scoring.stats import (
    bootstrap_ci,
    compare_paired,
    paired_bootstrap,
    williams_t,
    williams_test,
)


def _data(n: int, noise: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    gold = rng.integers(1, 6, n).astype(float)
    return np.round(gold + rng.normal(0, noise, n)), gold


@pytest.mark.parametrize("seed", [0, 1])
def test_correlations_equal_scipy_with_ties(seed: int) -> None:
    pred, gold = _data(57, 1.3, seed)
    assert pearson(pred, gold) == pytest.approx(100 * sps.pearsonr(pred, gold)[0], abs=1e-9)
    assert spearman(pred, gold) == pytest.approx(100 * sps.spearmanr(pred, gold)[0], abs=1e-9)
    assert spearman(pred, gold) != pytest.approx(pearson(pred, gold), abs=1e-3)  # ties: the two differ


def test_undefined_correlations_are_none_where_scipy_gives_nan() -> None:
    assert pearson([1, 2, 3], [2, 2, 2]) is None and spearman([4, 4, 4], [1, 2, 3]) is None
    assert pearson([1], [1]) is None and spearman([1], [2]) is None
    assert pearson([1, 2], [3, 1]) == pytest.approx(-100.0)


def _rowwise(which: str):  # type: ignore[no-untyped-def]
    """The statistic for scipy's bootstrap, vectorised over resamples (scipy passes B×n arrays): scipy's own
    average ranks for Spearman, then Pearson along the last axis (checked against scipy.stats.pearsonr below)."""

    def stat(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        if which == "spearman":
            x, y = sps.rankdata(x, axis=axis), sps.rankdata(y, axis=axis)
        dx = x - x.mean(axis=axis, keepdims=True)
        dy = y - y.mean(axis=axis, keepdims=True)
        return 100 * (dx * dy).sum(axis=axis) / np.sqrt((dx * dx).sum(axis=axis) * (dy * dy).sum(axis=axis))

    return stat


def _scipy_percentile(pred: np.ndarray, gold: np.ndarray, which: str, b: int, seed: int, level: float):  # type: ignore[no-untyped-def]
    res = sps.bootstrap(
        (pred, gold),
        _rowwise(which),
        paired=True,
        vectorized=True,
        n_resamples=b,
        method="percentile",
        confidence_level=level,
        rng=np.random.default_rng(seed),
    )
    return res.confidence_interval


def test_the_vectorised_reference_statistic_is_scipys() -> None:
    pred, gold = _data(30, 1.5, 9)
    assert _rowwise("pearson")(pred, gold) == pytest.approx(100 * sps.pearsonr(pred, gold)[0])
    assert _rowwise("spearman")(pred, gold) == pytest.approx(100 * sps.spearmanr(pred, gold)[0])


@pytest.mark.parametrize(("level", "b", "seed"), [(0.95, 200, 3), (0.90, 200, 4), (0.95, 300, 5)])
@pytest.mark.parametrize("which", ["spearman", "pearson"])
def test_item_bootstrap_interval_equals_scipy_percentile_bootstrap(which: str, level: float, b: int, seed: int) -> None:
    pred, gold = _data(80, 1.5, seed)
    ours = bootstrap_ci(pred, gold, None, n_resamples=b, seed=seed, level=level)[which]
    ref = _scipy_percentile(pred, gold, which, b, seed, level)
    assert ours.estimate == pytest.approx(100 * (sps.spearmanr if which == "spearman" else sps.pearsonr)(pred, gold)[0])
    assert (ours.low, ours.high) == pytest.approx((ref.low, ref.high), abs=1e-7)


def test_the_default_level_is_95_percent() -> None:
    pred, gold = _data(80, 1.5, 6)
    ours = bootstrap_ci(pred, gold, None, n_resamples=200, seed=6)["spearman"]
    ref95, ref90 = (_scipy_percentile(pred, gold, "spearman", 200, 6, lv) for lv in (0.95, 0.90))
    assert (ours.low, ours.high) == pytest.approx((ref95.low, ref95.high), abs=1e-7)
    assert ours.low < ref90.low and ours.high > ref90.high


def _expanded(clusters: np.ndarray, drawn_clusters: np.ndarray) -> np.ndarray:
    """Row indices of one cluster resample, written out: every member of every drawn cluster."""
    return np.concatenate([np.flatnonzero(clusters == c) for c in drawn_clusters])


def _brute_force_paired(a, b, y, clusters, n_res, seed, metric):  # type: ignore[no-untyped-def]
    """The paired cluster bootstrap in its plainest form: draw clusters, copy out their rows, call scipy."""
    corr = sps.spearmanr if metric == "spearman" else sps.pearsonr
    n_clusters = clusters.max() + 1
    draws = np.random.default_rng(seed).integers(0, n_clusters, size=(n_res, n_clusters))
    diffs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # constant resamples: scipy warns and returns nan
        for row in draws:
            idx = _expanded(clusters, row)
            diffs.append(100 * (corr(a[idx], y[idx])[0] - corr(b[idx], y[idx])[0]))
    d = np.asarray(diffs)
    d = d[np.isfinite(d)]
    lo, hi = np.percentile(d, [2.5, 97.5])
    p = min(1.0, 2 * (min(np.sum(d <= 0), np.sum(d >= 0)) + 1) / (len(d) + 1))
    return lo, hi, p, len(d)


@pytest.mark.parametrize("metric", ["spearman", "pearson"])
def test_paired_cluster_bootstrap_equals_a_brute_force_reference(metric: str) -> None:
    rng = np.random.default_rng(11)
    y = rng.integers(1, 6, 24).astype(float)
    a = np.round(y + rng.normal(0, 1.0, 24))
    b = np.round(y + rng.normal(0, 1.6, 24))
    groups = [f"pair{i // 2:02d}" for i in range(24)]  # C-STS: both conditions of a sentence pair move together
    clusters = np.arange(24) // 2
    lo, hi, p = paired_bootstrap(a, b, y, groups, metric, n_resamples=150, seed=2)
    ref_lo, ref_hi, ref_p, _ = _brute_force_paired(a, b, y, clusters, 150, 2, metric)
    assert (lo, hi, p) == pytest.approx((ref_lo, ref_hi, ref_p), abs=1e-7)


def test_cluster_interval_equals_the_brute_force_percentile_interval() -> None:
    rng = np.random.default_rng(12)
    y = rng.integers(1, 6, 30).astype(float)
    x = np.round(y + rng.normal(0, 1.2, 30))
    groups = np.arange(30) // 3  # clusters of three, labelled out of order below
    labels = [f"g{(7 * g) % 10}" for g in groups]
    ci = bootstrap_ci(x, y, labels, n_resamples=200, seed=8, level=0.9)["spearman"]
    clusters = np.unique(labels, return_inverse=True)[1]
    draws = np.random.default_rng(8).integers(0, 10, size=(200, 10))
    vals = [100 * sps.spearmanr(x[_expanded(clusters, r)], y[_expanded(clusters, r)])[0] for r in draws]
    assert (ci.low, ci.high) == pytest.approx(tuple(np.percentile(vals, [5, 95])), abs=1e-7)


def test_undefined_resamples_are_dropped_not_counted() -> None:
    # Five items, two distinct predictions: some resamples draw one prediction value only (no correlation).
    x = np.array([1.0, 1.0, 1.0, 2.0, 2.0])
    y = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    ci = bootstrap_ci(x, y, None, n_resamples=200, seed=1)["pearson"]
    draws = np.random.default_rng(1).integers(0, 5, size=(200, 5))
    vals = np.array([np.nan if np.ptp(x[r]) == 0 else 100 * np.corrcoef(x[r], y[r])[0, 1] for r in draws])
    assert 0 < np.isnan(vals).sum() < 200
    kept = vals[np.isfinite(vals)]
    assert (ci.low, ci.high) == pytest.approx(tuple(np.percentile(kept, [2.5, 97.5])), abs=1e-7)


def test_bootstrap_p_value_has_the_plus_one() -> None:
    """A difference on the same side of 0 in every resample: p = 2 / (B + 1), never 0."""
    pred_good, gold = _data(300, 0.5, 1)
    pred_bad = np.round(gold + np.random.default_rng(2).normal(0, 3.0, 300))
    _, _, p = paired_bootstrap(pred_good, pred_bad, gold, None, "spearman", n_resamples=199, seed=0)
    assert p == pytest.approx(2 / 200)
    _, _, p_rev = paired_bootstrap(pred_bad, pred_good, gold, None, "spearman", n_resamples=199, seed=0)
    assert p_rev == pytest.approx(2 / 200)


def test_identical_runs_have_p_one_and_a_zero_interval() -> None:
    pred, gold = _data(50, 1.0, 3)
    assert paired_bootstrap(pred, pred, gold, None, "pearson", n_resamples=99, seed=0) == (0.0, 0.0, 1.0)


def test_too_few_items_give_no_interval() -> None:
    assert paired_bootstrap([1, 2], [2, 1], [1, 2]) == (None, None, None)
    ci = bootstrap_ci([1.0, 2.0], [1.0, 2.0])
    assert ci["pearson"].estimate == pytest.approx(100.0) and ci["pearson"].low is None
    assert bootstrap_ci([1.0, 2.0, 3.0], [1.0, 2.0, 4.0])["pearson"].low is not None


# --- Williams' t (Steiger 1980, eq. 3; Williams 1959) ------------------------------------------------------------


def test_williams_equals_the_depcor_example_that_cocor_pins() -> None:
    """Silver, Hittner & May (2006), depcor; R cocor's tests: cocor.dep.groups.overlap(.3, .4, .5, 100)."""
    assert round(williams_t(0.3, 0.4, 0.5, 100), 4) == -1.0767
    assert round(williams_test(0.3, 0.4, 0.5, 100), 4) == 0.2843  # type: ignore[arg-type]


def _williams_from_the_matrix(r12: float, r13: float, r23: float, n: int) -> float:
    """Steiger 1980 eq. 3 with |R| from numpy's determinant of the correlation matrix (a second derivation)."""
    det = np.linalg.det(np.array([[1, r12, r13], [r12, 1, r23], [r13, r23, 1]]))
    rbar = (r12 + r13) / 2
    t = (r12 - r13) * np.sqrt(((n - 1) * (1 + r23)) / (2 * (n - 1) / (n - 3) * det + rbar**2 * (1 - r23) ** 3))
    return float(t)


@pytest.mark.parametrize(
    ("r12", "r13", "r23", "n"),
    [(0.5, 0.2, 0.3, 50), (0.7, 0.4, 0.8, 50), (0.612, 0.541, 0.466, 157), (0.1, 0.6, -0.3, 9)],
)
def test_williams_equals_a_second_derivation(r12: float, r13: float, r23: float, n: int) -> None:
    t = _williams_from_the_matrix(r12, r13, r23, n)
    assert williams_t(r12, r13, r23, n) == pytest.approx(t, rel=1e-10)
    assert williams_test(r12, r13, r23, n) == pytest.approx(2 * sps.t.sf(abs(t), n - 3), rel=1e-10)


def test_williams_needs_four_items() -> None:
    assert williams_test(0.5, 0.3, 0.4, 3) is None
    assert williams_test(0.5, 0.3, 0.4, 4) is not None


def test_compare_paired_runs_williams_on_the_rank_correlations() -> None:
    pred_a, gold = _data(120, 1.0, 4)
    pred_b = np.round(gold + np.random.default_rng(5).normal(0, 1.4, 120))
    r = compare_paired(pred_a, pred_b, gold, None, "spearman", n_resamples=50)
    ra, rb, rab = (sps.spearmanr(u, v)[0] for u, v in ((pred_a, gold), (pred_b, gold), (pred_a, pred_b)))
    assert (r.n, r.a, r.b) == (120, pytest.approx(100 * ra), pytest.approx(100 * rb))
    assert r.diff == pytest.approx(100 * (ra - rb))
    assert r.p_williams == pytest.approx(2 * sps.t.sf(abs(_williams_from_the_matrix(ra, rb, rab, 120)), 117))
    rp = compare_paired(pred_a, pred_b, gold, None, "pearson", n_resamples=50)
    pa, pb, pab = (sps.pearsonr(u, v)[0] for u, v in ((pred_a, gold), (pred_b, gold), (pred_a, pred_b)))
    assert (rp.a, rp.b) == (pytest.approx(100 * pa), pytest.approx(100 * pb))
    assert rp.p_williams == pytest.approx(2 * sps.t.sf(abs(_williams_from_the_matrix(pa, pb, pab, 120)), 117))
    assert (rp.low, rp.high, rp.p_bootstrap) == pytest.approx(
        paired_bootstrap(pred_a, pred_b, gold, None, "pearson", n_resamples=50, seed=0)
    )


def test_the_defaults_are_1000_and_2000_resamples_seed_0_and_spearman() -> None:
    pred_a, gold = _data(12, 1.0, 7)
    pred_b = np.round(gold + np.random.default_rng(8).normal(0, 1.5, 12))
    assert bootstrap_ci(pred_a, gold) == bootstrap_ci(pred_a, gold, None, 1000, 0, 0.95)
    explicit = paired_bootstrap(pred_a, pred_b, gold, None, "spearman", 2000, 0)
    assert paired_bootstrap(pred_a, pred_b, gold) == explicit
    default = compare_paired(pred_a, pred_b, gold)
    assert (default.low, default.high, default.p_bootstrap) == explicit


def test_intervals_do_not_depend_on_the_scale_of_the_scores() -> None:
    """Correlations are unit-free: scores a trillion times smaller (or larger) give the same interval, never
    'undefined' because a variance is small in absolute terms."""
    pred, gold = _data(60, 1.2, 13)
    base = bootstrap_ci(pred, gold, None, n_resamples=100, seed=1)
    for scale_pred, scale_gold in ((1e-12, 1.0), (1.0, 1e-12), (1e9, 1e-9)):
        scaled = bootstrap_ci(pred * scale_pred, gold * scale_gold, None, n_resamples=100, seed=1)
        for name in ("spearman", "pearson"):
            got, want = scaled[name], base[name]
            assert (got.estimate, got.low, got.high) == pytest.approx((want.estimate, want.low, want.high), rel=1e-9)


def test_fallback_spread_of_one_draw_has_sd_zero_and_of_none_defined_nothing() -> None:
    from harness.scoring.stats import fallback_spread

    pred, gold = np.array([1.0, 2.0, 3.0, 4.0]), np.array([1.0, 3.0, 2.0, 4.0])
    invalid = np.array([True, False, False, False])
    one = fallback_spread(pred, gold, invalid, np.array([[5.0]]))
    assert one["pearson"] == (pytest.approx(100 * sps.pearsonr([5.0, 2, 3, 4], gold)[0]), 0.0)
    constant = fallback_spread(np.full(4, 2.0), gold, np.array([True, True, True, True]), np.full((3, 4), 2.0))
    assert constant == {"spearman": (None, None), "pearson": (None, None)}
