"""How K replies to one item combine (harness/scoring/repeats.py): the reducers against numpy and scipy, the item
invalid only when no reply held a number, failed when one request failed, the spread and both invalid rates."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.stats

from harness.scoring.repeats import combine, reduce_values, repeat_metrics
from harness.types import Scored

CASES = [[3.0], [1.0, 2.0, 2.0, 5.0], [4.0, 1.0, 3.0], [2.5, 2.5, 4.0, 4.0, 1.0], [1.2, 3.7, 3.7, 5.0, 0.4, 3.1]]


@pytest.mark.parametrize("values", CASES)
def test_the_reducers_agree_with_numpy_and_scipy(values: list[float]) -> None:
    assert reduce_values(values, "mean") == pytest.approx(float(np.mean(values)), abs=1e-12)
    assert reduce_values(values, "median") == float(np.median(values))
    assert reduce_values(values, "mode") == float(scipy.stats.mode(values).mode)  # scipy: the smallest of ties


def test_the_mean_of_equal_replies_is_that_reply() -> None:
    assert reduce_values([3.46, 3.46, 3.46], "mean") == 3.46  # a naive float sum gives 3.4599999999999995


def _s(item: str, text: str | None, parsed: float | None, error: str | None = None) -> Scored:
    fallback = 2.5  # the seeded draw: the same for every repeat of an item
    valid = parsed is not None
    prediction = None if error else parsed if valid else fallback
    reason = "error" if error else "number" if valid else "no-number"
    return Scored(
        id=item,
        prompt="p",
        shot_ids=(),
        output=text,
        parsed=parsed,
        valid=valid,
        prediction=prediction,
        label=3.0,
        error=error,
        reason=reason,
        usage=None if error else {"input_tokens": 10, "output_tokens": 2},
    )


def test_items_combine_over_their_valid_replies() -> None:
    repeats = [
        [_s("a", "2", 2.0), _s("b", "no", None), _s("c", "4", 4.0), _s("d", "9", 9.0)],
        [_s("a", "4", 4.0), _s("b", "hm", None), _s("c", "x", None, "HTTP 500"), _s("d", "5", 5.0)],
        [_s("a", "no", None), _s("b", "?", None), _s("c", "4", 4.0), _s("d", "7", 7.0)],
    ]
    a, b, c, d = combine(repeats, "mean", (1.0, 5.0))
    assert (a.parsed, a.valid, a.prediction, a.reason) == (3.0, True, 3.0, "number")  # the invalid reply left out
    assert a.output == "2"  # the first repeat's reply stands for the item (all K are in `repeats`)
    assert a.repeats == {"values": [2.0, 4.0, None], "valid": 2, "sd": pytest.approx(np.std([2, 4], ddof=1)),
                         "range": 2.0, "outputs": ["2", "4", "no"]}  # fmt: skip
    assert a.usage == {"input_tokens": 30, "output_tokens": 6}
    assert (b.parsed, b.valid, b.prediction, b.reason) == (None, False, 2.5, "no-number")  # invalid only when all are
    assert (c.prediction, c.error, c.reason) == (None, "HTTP 500", "error")  # one failed request: the item failed
    assert (d.parsed, d.reason) == (7.0, "out-of-range")
    metrics = repeat_metrics([a, b, c, d], 3, "mean", 0.7)
    assert metrics["replies"] == 9 and metrics["invalid_replies_pct"] == pytest.approx(100 * 4 / 9)  # c: failed
    assert metrics["invalid_items_pct"] == pytest.approx(100 / 3)
    assert metrics["mean_range"] == pytest.approx((2.0 + 4.0) / 2)
    assert metrics["items_disagreeing_pct"] == 100.0


def test_median_and_mode_reduce_the_same_replies_otherwise() -> None:
    repeats = [[_s("a", "1", 1.0)], [_s("a", "4", 4.0)], [_s("a", "4", 4.0)], [_s("a", "5", 5.0)]]
    assert [combine(repeats, how, (1.0, 5.0))[0].prediction for how in ("mean", "median", "mode")] == [3.5, 4.0, 4.0]


def test_the_spread_counts_agreeing_items_and_lone_valid_replies() -> None:
    """One valid reply has no sd; replies that agree have range 0 and do not disagree; a failed item is not valid;
    usage sums every key any repeat reported."""
    thinking = {"input_tokens": 10, "output_tokens": 9, "reasoning_tokens": 7}
    repeats = [
        [_s("a", "3", 3.0), _s("b", "3", 3.0), _s("c", "no", None), _s("d", "no", None), _s("e", "x", None, "t/o")],
        [_s("a", "no", None), _s("b", "3", 3.0), _s("c", "no", None), _s("d", "no", None), _s("e", "4", 4.0)],
    ]
    repeats[1][1] = dataclasses.replace(repeats[1][1], usage=thinking)
    a, b, c, d, e = combine(repeats, "mean", (1.0, 5.0))
    assert (a.repeats["sd"], a.repeats["range"], b.repeats["sd"], b.repeats["range"]) == (None, 0.0, 0.0, 0.0)
    assert b.usage == {"input_tokens": 20, "output_tokens": 11, "reasoning_tokens": 7}
    assert (e.valid, e.prediction, e.error) == (False, None, "t/o")
    metrics = repeat_metrics([a, b, c, d, e], 2, "mean", 1.0)
    assert metrics["invalid_items_pct"] == pytest.approx(100 * 2 / 4)
    assert metrics["invalid_replies_pct"] == pytest.approx(100 * 5 / 8)
    assert metrics["items_disagreeing_pct"] == 0.0 and metrics["mean_sd"] == 0.0
