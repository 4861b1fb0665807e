"""Correlations match scipy; invalid and out-of-range rates are counted, not hidden."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from harness.metrics import compute_metrics, pearson, spearman
from harness.types import Scored


def _s(i: int, parsed: float | None, prediction: float | None, label: float | None, error: str | None = None) -> Scored:
    return Scored(str(i), "p", (), None, parsed, parsed is not None, prediction, label, error)


def test_spearman_and_pearson_match_scipy_with_ties() -> None:
    rng = np.random.default_rng(0)
    x = rng.integers(1, 6, 300).astype(float)
    y = x + rng.normal(0, 1.5, 300)
    assert spearman(x, y) == pytest.approx(100 * stats.spearmanr(x, y).statistic)
    assert pearson(x, y) == pytest.approx(100 * stats.pearsonr(x, y).statistic)


def test_constant_predictions_give_no_correlation() -> None:
    assert pearson([3, 3, 3], [1, 2, 3]) is None
    assert spearman([1.0], [2.0]) is None


def test_invalid_and_out_of_range_are_counted() -> None:
    samples = [_s(0, 4.0, 4.0, 5.0), _s(1, None, 2.2, 1.0), _s(2, 10.0, 10.0, 3.0), _s(3, 1.0, 1.0, 2.0)]
    m = compute_metrics(samples, (1.0, 5.0))
    assert (m["n"], m["invalid"], m["out_of_range"]) == (4, 1, 1)
    assert m["invalid_pct"] == 25.0 and m["out_of_range_pct"] == 25.0
    assert m["n_valid"] == 3
    assert m["mse"] == pytest.approx(((4 - 5) ** 2 + (2.2 - 1) ** 2 + (10 - 3) ** 2 + (1 - 2) ** 2) / 4)


def test_valid_only_metrics_leave_fallbacks_out() -> None:
    samples = [_s(i, float(i % 5 + 1), float(i % 5 + 1), float(i % 5 + 1)) for i in range(10)]
    samples.append(_s(10, None, 1.0, 5.0))
    m = compute_metrics(samples, (1.0, 5.0))
    assert m["spearman_valid"] == pytest.approx(100.0)
    assert m["spearman"] < 100.0


def test_errors_are_not_scored() -> None:
    samples = [_s(0, 4.0, 4.0, 5.0), _s(1, 2.0, 2.0, 1.0), _s(2, None, None, 3.0, error="timeout")]
    m = compute_metrics(samples, (1.0, 5.0))
    assert m["n"] == 2 and m["errors"] == 1


def test_hidden_labels_give_rates_but_no_correlations() -> None:
    m = compute_metrics([_s(0, 4.0, 4.0, None), _s(1, None, 3.1, None)], (1.0, 5.0))
    assert m["invalid_pct"] == 50.0
    assert "spearman" not in m
