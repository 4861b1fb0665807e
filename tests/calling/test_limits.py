"""Rate-limit headers (harness/calling/limits.py) in OpenAI's and Anthropic's words."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from multidict import CIMultiDict

from harness.calling.limits import duration, rate_limit, refill_rate, unfit
from harness.types import RateLimit


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("12ms", 0.012), ("1s", 1.0), ("6m0s", 360.0), ("1h2m3.5s", 3723.5), ("0.5", 0.5), ("20", 20.0)],
)
def test_go_durations(text: str, seconds: float) -> None:
    assert duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "soon", "5 minutes", "1x", "-3s"])
def test_unreadable_durations_are_none(text: str) -> None:
    assert duration(text) is None


def test_openai_headers() -> None:
    headers = {
        "x-ratelimit-limit-requests": "5000",
        "x-ratelimit-remaining-requests": "4999",
        "x-ratelimit-reset-requests": "12ms",
        "x-ratelimit-limit-tokens": "160000",
        "x-ratelimit-remaining-tokens": "159976",
        "x-ratelimit-reset-tokens": "9ms",
    }
    assert rate_limit(headers) == RateLimit(5000, 4999, 0.012, 160000, 159976, 0.009)


def test_names_match_in_any_case() -> None:
    headers = CIMultiDict({"X-RateLimit-Limit-Requests": "60", "X-RateLimit-Remaining-Requests": "0"})
    assert rate_limit(headers) == RateLimit(60, 0, None, None, None, None)


def test_anthropic_headers_prefer_input_tokens() -> None:
    now = datetime(2026, 11, 25, 12, 0, 0, tzinfo=UTC).timestamp()
    headers = {
        "anthropic-ratelimit-requests-limit": "50",
        "anthropic-ratelimit-requests-remaining": "49",
        "anthropic-ratelimit-requests-reset": "2026-11-25T12:00:01.5Z",
        "anthropic-ratelimit-input-tokens-limit": "30000",
        "anthropic-ratelimit-input-tokens-remaining": "29000",
        "anthropic-ratelimit-input-tokens-reset": "2026-11-25T12:00:02+00:00",
        "anthropic-ratelimit-tokens-limit": "99",
    }
    assert rate_limit(headers, now=now) == RateLimit(50, 49, 1.5, 30000, 29000, 2.0)


def test_no_rate_limit_headers_and_quirky_values() -> None:
    assert rate_limit({"content-type": "application/json"}) is None
    # Azure sends -1 for "not reported"; garbage and naive times are not numbers either.
    quirky = {"x-ratelimit-limit-tokens": "-1", "x-ratelimit-remaining-tokens": "nan", "x-ratelimit-reset-tokens": "?"}
    assert rate_limit(quirky) == RateLimit()
    naive = {"anthropic-ratelimit-requests-limit": "5", "anthropic-ratelimit-requests-reset": "2026-11-25T12:00:00"}
    assert rate_limit(naive) == RateLimit(5, None, None, None, None, None)


def test_a_token_limit_under_one_prompt_is_said_with_both_numbers() -> None:
    assert unfit(50, None, stated=False) is None and unfit(50, 50, stated=False) is None  # fits, just
    said = unfit(50.4, 50, stated=False)
    assert said is not None and said.startswith(
        "the server's rate-limit headers give a token limit of 50 a minute, fewer than this prompt's 50 tokens:"
    )
    assert unfit(51, 3, stated=True) == (
        "--tpm 3 is fewer tokens a minute than this prompt's 51 tokens: no request this size fits; raise --tpm"
    )


def test_the_limiter_keeps_the_token_limit_it_paces_to() -> None:
    from harness.calling.limiter import Limiter

    lim = Limiter(8, clock=lambda: 100.0)
    said = {"x-ratelimit-limit-tokens": "3", "x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "20s"}
    lim.in_flight = 1
    lim.release(99.9, ok=True, limits=rate_limit(said))
    assert lim.tokens is not None and lim.tokens.limit == 3.0
    assert Limiter(8, tpm=600).tokens.limit == 600  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("limit", "remaining", "reset", "rate"),
    [
        (60, 58, 1.0, 1.0),  # two missing: the fewest read (limit / 60 agrees with 2 a second, within 4x)
        (60, 59, 1.0, None),  # one missing: rounding alone could make it
        (60, 50, 0.0, None),  # no time to come back in: no rate
        (75, 65, 10.0, 1.25),  # limit / 60 exactly 1.25 times the reading: still the per-minute figure
        (60, 20, 10.0, 1.0),  # the reading exactly 4 times limit / 60: still the per-minute figure
        (60, 50, 20.0, 0.5),  # limit / 60 twice the reading: the reading (a bucket's size), a sixth missing
        (60, 15, 10.0, 4.5),  # the reading 4.5 times limit / 60: the reading
        (100, 90, 1.0, 10.0),  # exactly a tenth missing: read from the ratio
        (100, 91, 1.0, None),  # less than a tenth missing and no agreement: unknown
    ],
)
def test_the_refill_rate_at_each_boundary(limit: float, remaining: float, reset: float, rate: float | None) -> None:
    assert refill_rate(limit, remaining, reset) == rate


def test_a_negative_number_of_seconds_is_none_past() -> None:
    assert duration("-0.5") == 0.0
