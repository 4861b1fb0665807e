"""Correlations match scipy; invalid and out-of-range rates are counted, not hidden."""

from __future__ import annotations

import dataclasses
from collections import Counter

import numpy as np
import pytest
from scipy import stats

from harness.scoring.metrics import compute_metrics, pearson, spearman
from harness.types import Scored


def _s(i: int, parsed: float | None, prediction: float | None, label: float | None, error: str | None = None) -> Scored:
    return Scored(
        id=str(i),
        prompt="p",
        shot_ids=(),
        output=None,
        parsed=parsed,
        valid=parsed is not None,
        prediction=prediction,
        label=label,
        error=error,
    )


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
    assert m["mse_note"] == "includes 1 out-of-range predictions"  # flagged where it is shown (metrics line)
    in_range = compute_metrics([_s(0, 4.0, 4.0, 5.0), _s(1, 2.0, 2.0, 1.0)], (1.0, 5.0))
    assert "mse_note" not in in_range


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


def _note_cases() -> list[tuple[str, list[Scored]]]:
    rng = np.random.default_rng(1)
    big = [
        _s(i, float(v), float(v), float(g))
        for i, (v, g) in enumerate(zip(rng.integers(1, 6, 40), rng.integers(1, 6, 40), strict=True))
    ]
    return [
        ("n=2", [_s(0, 4.0, 4.0, 5.0), _s(1, 2.0, 2.0, 1.0)]),
        ("n=1", [_s(0, 4.0, 4.0, 5.0)]),
        ("constant predictions: all 100 parsed as 1.0", [_s(i, 1.0, 1.0, float(i % 5 + 1)) for i in range(100)]),
        ("constant labels: all 40 are 3.0", [_s(i, float(i % 5 + 1), float(i % 5 + 1), 3.0) for i in range(40)]),
        ("n=5; constant predictions: all 5 parsed as 2.0", [_s(i, 2.0, 2.0, float(i + 1)) for i in range(5)]),
        ("", big),
        # issue 42: Qwen2.5-Coder-0.5B answered "3" to most STS-B items; a majority of one value is flagged
        ("near-constant predictions: 31 of 40 (78%) are 3.0", [_s(i, *[3.0 if i < 31 else float(i % 2 + 1)] * 2,
                                                                  float(i % 5 + 1)) for i in range(40)]),
        ("", [_s(i, *[3.0 if i < 20 else float(i % 2 + 1)] * 2, float(i % 5 + 1)) for i in range(40)]),  # half: no
        ("near-constant predictions: 21 of 40 (52%) are 3.0",
         [_s(i, *[3.0 if i < 21 else float(i % 2 + 1)] * 2, float(i % 5 + 1)) for i in range(40)]),
    ]  # fmt: skip


@pytest.mark.parametrize(("note", "samples"), _note_cases())
def test_a_correlation_that_could_mislead_carries_its_reason(note: str, samples: list[Scored]) -> None:
    m = compute_metrics(samples, (1.0, 5.0))
    for name in ("spearman", "pearson"):
        assert m.get(f"{name}_note", "") == note
        # The contract: a note exactly when the value is None, rests on fewer than 30 items, or more than half
        # the predictions are one value (counted here with collections.Counter, not numpy's unique).
        top = Counter(s.prediction for s in samples).most_common(1)[0][1]
        assert (f"{name}_note" in m) == (m[name] is None or m["n_labelled"] < 30 or 2 * top > len(samples))


def test_fallback_draws_are_not_called_parsed() -> None:
    samples = [_s(i, None, 3.0, float(i % 5 + 1)) for i in range(40)]
    m = compute_metrics(samples, (1.0, 5.0))
    assert m["spearman"] is None and m["spearman_note"] == "constant predictions: all 40 equal to 3.0"
    assert m["spearman_valid"] is None and m["spearman_valid_note"] == "n=0"


def test_reasons_are_counted_over_every_sample() -> None:
    samples = [
        dataclasses.replace(_s(0, 4.0, 4.0, 5.0), reason="number"),
        dataclasses.replace(_s(1, 1.0, 1.0, 2.0), reason="echo"),
        dataclasses.replace(_s(2, 1.0, 1.0, 2.0), reason="echo"),
        dataclasses.replace(_s(3, None, None, 2.0, error="timeout"), reason="error"),
        _s(4, None, None, 1.0),  # a dry-run sample has no reason
    ]
    assert compute_metrics(samples, (1.0, 5.0))["reasons"] == {"echo": 2, "error": 1, "number": 1}


def test_strict_metrics_are_a_second_set_beside_the_papers() -> None:
    samples = [
        dataclasses.replace(
            _s(i, float(i % 5 + 1), float(i % 5 + 1), float(i % 5 + 1)),
            parsed_strict=None,
            prediction_strict=3.0 if i % 2 else float(i % 5 + 1),
        )
        for i in range(40)
    ]
    samples = [dataclasses.replace(s, parsed_strict=s.prediction) if int(s.id) % 2 == 0 else s for s in samples]
    plain = compute_metrics(samples, (1.0, 5.0))
    strict = compute_metrics(samples, (1.0, 5.0), strict=True)
    assert {k: v for k, v in strict.items() if "strict" not in k} == plain  # the paper's numbers unchanged
    assert strict["invalid_strict"] == 20 and strict["invalid_strict_pct"] == 50.0 and plain["invalid_pct"] == 0.0
    assert strict["spearman"] == pytest.approx(100.0) and strict["spearman_strict"] < 100.0
    assert strict["n_valid_strict"] == 20


def test_no_mse_off_the_label_scale() -> None:
    samples = [_s(i, v, v, float(i % 5 + 1)) for i, v in enumerate([0.1, -0.3, 0.9, 0.5, 0.2])]
    assert "mse" in compute_metrics(samples, (-1.0, 1.0))
    assert "mse" not in compute_metrics(samples, (-1.0, 1.0), on_label_scale=False)


def test_strict_invalid_rate_counts_the_unparsed_among_the_answered() -> None:
    """Uneven on purpose (a 50/50 split reads the same whichever side is counted)."""
    samples = [
        dataclasses.replace(_s(i, 3.0, 3.0, 1.0 + i % 5), parsed_strict=None if i < 3 else 3.0) for i in range(10)
    ]
    samples.append(dataclasses.replace(_s(10, None, None, 2.0, error="HTTP 500")))  # not answered: not counted
    m = compute_metrics(samples, (1.0, 5.0), strict=True)
    assert (m["invalid_strict"], m["invalid_strict_pct"], m["n"]) == (3, 30.0, 10)


def test_ranks_are_scipys_average_ranks() -> None:
    """Spearman is invariant to a shift of every rank; the ranks themselves are checked here too."""
    from harness.scoring.metrics import _rank

    x = np.array([3.0, 1.0, 3.0, 2.0, 5.0, 3.0, 1.0])
    assert _rank(x).tolist() == stats.rankdata(x, method="average").tolist() == [5.0, 1.5, 5.0, 3.0, 7.0, 5.0, 1.5]


def test_unanswered_samples_are_neither_counted_nor_scored() -> None:
    """A dry-run line (no error, no prediction) is not an answer: it counts nowhere."""
    samples = [_s(0, 4.0, 4.0, 5.0), _s(1, 2.0, 2.0, 1.0), _s(2, 3.0, 3.0, 4.0), _s(3, None, None, 3.0)]
    m = compute_metrics(samples, (1.0, 5.0))
    assert (m["n"], m["errors"], m["invalid"], m["n_labelled"]) == (3, 0, 0, 3)
    assert m["pearson"] == pytest.approx(100 * stats.pearsonr([4.0, 2.0, 3.0], [5.0, 1.0, 4.0]).statistic)


def test_notes_at_their_boundaries() -> None:
    """30 items carry no n note, 29 do; two equal predictions (or labels) already make a constant note."""
    rng = np.random.default_rng(4)
    for n, note in ((30, None), (29, "n=29")):
        vals = rng.permutation(np.arange(n) % 5 + 1.0)
        m = compute_metrics([_s(i, v, v, float(i % 5 + 1)) for i, v in enumerate(vals)], (1.0, 5.0))
        assert m.get("spearman_note") == note
    two = compute_metrics([_s(0, 2.0, 2.0, 1.0), _s(1, 2.0, 2.0, 4.0)], (1.0, 5.0))
    assert two["pearson_note"] == "n=2; constant predictions: all 2 parsed as 2.0"
    labels = compute_metrics([_s(0, 1.0, 1.0, 3.0), _s(1, 2.0, 2.0, 3.0)], (1.0, 5.0))
    assert labels["pearson_note"] == "n=2; constant labels: all 2 are 3.0"
