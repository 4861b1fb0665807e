"""Bootstrap CIs, paired comparisons and the fallback spread: vectorised, and right against slow references."""

from __future__ import annotations

import numpy as np
import pytest

from harness.scoring.metrics import pearson, spearman
from harness.scoring.stats import (
    bootstrap_ci,
    cluster_ids,
    compare_paired,
    fallback_spread,
    resample_weights,
    weighted_pearson,
    weighted_ranks,
    williams_test,
)


def _data(n: int, noise: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    gold = rng.integers(1, 6, n).astype(float)
    return np.round(gold + rng.normal(0, noise, n)), gold


def test_weighted_statistics_equal_the_expanded_resample() -> None:
    pred, gold = _data(300, 1.5)
    w = resample_weights(cluster_ids(np.arange(300) // 2), 5, np.random.default_rng(3))
    for row in w:
        idx = np.repeat(np.arange(300), row.astype(int))
        one = row[None, :]
        got_s = weighted_pearson(weighted_ranks(pred, one), weighted_ranks(gold, one), one)[0]
        assert got_s == pytest.approx(spearman(pred[idx], gold[idx]), abs=1e-9)
        assert weighted_pearson(pred, gold, one)[0] == pytest.approx(pearson(pred[idx], gold[idx]), abs=1e-9)


def test_cluster_resampling_draws_both_members_of_a_pair_together() -> None:
    w = resample_weights(cluster_ids(np.arange(40) // 2), 50, np.random.default_rng(0))
    assert np.array_equal(w[:, 0::2], w[:, 1::2])
    assert np.all(w.sum(axis=1) == 40)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ci_contains_the_point_estimate(seed: int) -> None:
    pred, gold = _data(500, 2.0, seed)
    ci = bootstrap_ci(pred, gold, np.arange(500) // 2, seed=seed)
    for name in ("spearman", "pearson"):
        assert ci[name].low < ci[name].estimate < ci[name].high


def test_ci_shrinks_with_n() -> None:
    small = bootstrap_ci(*_data(200, 2.0))["spearman"]
    large = bootstrap_ci(*_data(3000, 2.0))["spearman"]
    assert (large.high - large.low) < 0.5 * (small.high - small.low)


def test_resampling_duplicated_rows_as_items_is_overconfident() -> None:
    pred, gold = _data(400, 2.0)
    dup_pred, dup_gold = np.repeat(pred, 2), np.repeat(gold, 2)
    items = bootstrap_ci(dup_pred, dup_gold)["spearman"]
    clusters = bootstrap_ci(dup_pred, dup_gold, np.arange(800) // 2)["spearman"]
    assert (clusters.high - clusters.low) > 1.25 * (items.high - items.low)


def test_identical_runs_do_not_differ() -> None:
    pred, gold = _data(400, 1.5)
    r = compare_paired(pred, pred, gold, np.arange(400) // 2, n_resamples=500)
    assert r.diff == 0 and r.p_bootstrap == 1.0


def test_a_clearly_better_run_has_a_small_p_value() -> None:
    pred_good, gold = _data(1000, 1.0)
    pred_bad = np.round(gold + np.random.default_rng(9).normal(0, 3.0, 1000))
    r = compare_paired(pred_good, pred_bad, gold, np.arange(1000) // 2, n_resamples=1000)
    assert r.diff > 0 and r.low > 0
    assert r.p_bootstrap < 0.01 and r.p_williams < 0.01


def test_williams_test_is_one_for_equal_correlations_and_symmetric() -> None:
    assert williams_test(0.4, 0.4, 0.5, 100) == pytest.approx(1.0)
    assert williams_test(0.5, 0.3, 0.4, 100) == pytest.approx(williams_test(0.3, 0.5, 0.4, 100))
    assert williams_test(0.5, 0.3, 0.4, 1000) < williams_test(0.5, 0.3, 0.4, 100)


def test_fallback_spread_redraws_only_the_invalid_items() -> None:
    pred, gold = _data(100, 1.0)
    invalid = np.zeros(100, dtype=bool)
    invalid[:30] = True
    draws = np.random.default_rng(0).uniform(1, 5, (8, 30))
    spread = fallback_spread(pred, gold, invalid, draws)
    expected = []
    for row in draws:
        x = pred.copy()
        x[:30] = row
        expected.append(spearman(x, gold))
    assert spread["spearman"][0] == pytest.approx(np.mean(expected))
    assert spread["spearman"][1] == pytest.approx(np.std(expected, ddof=1))


def test_weighted_pearson_is_bit_for_bit_the_textbook_formula() -> None:
    """It reuses its products to save passes over B×n arrays; the numbers (hence every CI) must not move at all."""

    def textbook(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
        total = w.sum(axis=1, keepdims=True)
        mx, my = (w * x).sum(axis=1, keepdims=True) / total, (w * y).sum(axis=1, keepdims=True) / total
        dx, dy = x - mx, y - my
        cov, vx, vy = (w * dx * dy).sum(axis=1), (w * dx * dx).sum(axis=1), (w * dy * dy).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            r = 100.0 * cov / np.sqrt(vx * vy)
        return np.where((vx > 1e-20 * (w * x * x).sum(axis=1)) & (vy > 1e-20 * (w * y * y).sum(axis=1)), r, np.nan)

    pred, gold = _data(700, 1.5)
    w = resample_weights(cluster_ids(np.arange(700) // 2), 50, np.random.default_rng(3))
    ranks = weighted_ranks(pred, w), weighted_ranks(gold, w)
    for x, y in ((pred, gold), ranks, (np.full(700, 3.0), gold)):
        assert np.array_equal(weighted_pearson(x, y, w), textbook(x, y, w), equal_nan=True)
