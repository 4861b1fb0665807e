"""Read a provider's rate-limit headers into a RateLimit and the refill rate they reveal (pure; used by the API
backends and dispatch's limiter, harness/calling/limiter.py, with `Pacer`, the token bucket it paces by).

OpenAI (and vLLM-style gateways that copy it) send, on every reply:
  x-ratelimit-limit-requests / -tokens       the per-minute limit
  x-ratelimit-remaining-requests / -tokens   what is left of it
  x-ratelimit-reset-requests / -tokens       until it is whole again, as a Go duration: "12ms", "1s", "6m0s"
Anthropic sends anthropic-ratelimit-{requests,input-tokens,tokens}-{limit,remaining,reset}, the reset as an
RFC 3339 time. Input tokens are preferred to Anthropic's combined `tokens` family: the prompt is what we
can count before sending. A header that is absent or unreadable is None: a quirky header never fails a request
(a reset of `inf`, `nan` or past what a float holds is unreadable; a far-off one is capped by the limiter).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping
from datetime import datetime

from harness.types import RateLimit

_OPENAI = "x-ratelimit-"
_ANTHROPIC = "anthropic-ratelimit-"
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_PER_SECOND = {"h": 1 / 3600, "m": 1 / 60, "s": 1.0, "ms": 1000.0}  # units in a second (divide: "9ms" is 0.009)


def rate_limit(headers: Mapping[str, str], now: float | None = None) -> RateLimit | None:
    """The rate-limit state the headers report, or None when they report none. `headers` looks names up in
    lower case: aiohttp's and httpx's headers match any case, a plain dict must have lower-case names.
    Never raises: the reply these headers came with is paid for and must not be lost to them."""
    try:
        return _rate_limit(headers, now)
    except Exception:  # a header no rule above foresaw: no news about the limit, the answer is kept
        return None


def _rate_limit(headers: Mapping[str, str], now: float | None) -> RateLimit | None:
    if _OPENAI + "limit-requests" in headers or _OPENAI + "limit-tokens" in headers:
        return RateLimit(
            _number(headers.get(_OPENAI + "limit-requests")),
            _number(headers.get(_OPENAI + "remaining-requests")),
            duration(headers.get(_OPENAI + "reset-requests")),
            _number(headers.get(_OPENAI + "limit-tokens")),
            _number(headers.get(_OPENAI + "remaining-tokens")),
            duration(headers.get(_OPENAI + "reset-tokens")),
        )
    tokens = "input-tokens" if _ANTHROPIC + "input-tokens-limit" in headers else "tokens"
    if _ANTHROPIC + "requests-limit" in headers or f"{_ANTHROPIC}{tokens}-limit" in headers:
        return RateLimit(
            _number(headers.get(_ANTHROPIC + "requests-limit")),
            _number(headers.get(_ANTHROPIC + "requests-remaining")),
            _until(headers.get(_ANTHROPIC + "requests-reset"), now),
            _number(headers.get(f"{_ANTHROPIC}{tokens}-limit")),
            _number(headers.get(f"{_ANTHROPIC}{tokens}-remaining")),
            _until(headers.get(f"{_ANTHROPIC}{tokens}-reset"), now),
        )
    return None


def duration(value: str | None) -> float | None:
    """Seconds in a Go-style duration ("1h2m3.5s", "6m0s", "120ms") or a bare number of seconds."""
    if value is None:
        return None
    text = value.strip()
    try:
        return _finite(float(text))
    except ValueError:
        pass
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return _finite(sum(float(n) / _PER_SECOND[u] for n, u in parts))


def _finite(seconds: float) -> float | None:
    """`inf`, `nan` or "1e400" is no duration: None (dividing by it gave a pacing rate of 0, issue 30)."""
    return max(0.0, seconds) if math.isfinite(seconds) else None


def _until(value: str | None, now: float | None) -> float | None:
    """Seconds from now until an RFC 3339 time."""
    if value is None:
        return None
    try:
        when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        return None
    return _finite(when.timestamp() - (time.time() if now is None else now))


class Pacer:
    """A GCRA token bucket: `rate` units a second, bursts of up to `burst` units. `free_at(cost)`: the earliest
    time a request of `cost` units fits (the bucket never goes below empty); `book`: one left at `now`. `limit`:
    the per-minute figure it paces to, where one was stated or read (for `unfit`)."""

    def __init__(self, rate: float, burst: float, limit: float | None = None) -> None:
        self.rate, self.burst, self.limit = rate, burst, limit
        self.tat = -math.inf  # the bucket's theoretical arrival time: the next unit is free from then on

    def free_at(self, cost: float) -> float:
        return self.tat - (self.burst - cost) / self.rate

    def book(self, cost: float, now: float) -> None:
        self.tat = max(self.tat, now) + cost / self.rate


def unfit(cost: float, limit: float | None, stated: bool) -> str | None:
    """Why a prompt of `cost` tokens can never be sent under a per-minute token `limit` (the user's --tpm when
    `stated`, else the server's headers), or None. A provider's bucket of `limit` tokens never holds more (OpenAI
    refuses such a request: "Request too large"), and pacing to it spaced such requests cost/limit minutes apart
    and more: 3 tokens a minute sent a 50-token prompt every 34 minutes, with no end in sight (issue 41)."""
    if limit is None or cost <= limit:
        return None
    tokens = f"this prompt's {cost:.0f} tokens"
    if stated:
        return f"--tpm {limit:g} is fewer tokens a minute than {tokens}: no request this size fits; raise --tpm"
    return (
        f"the server's rate-limit headers give a token limit of {limit:g} a minute, fewer than {tokens}: no request "
        "this size can fit under it; if that figure is wrong, state the limit with --tpm N (the headers do not "
        "override it)"
    )


LEARN_DEFICIT = 0.1  # a bucket's size is read only while at least this share of it is missing


def refill_rate(limit: float, remaining: float, reset: float) -> float | None:
    """Units a second the provider's bucket refills at, read as (limit - remaining) / reset: what is missing over
    the time it takes to come back; None when the headers cannot tell. OpenAI and Anthropic document `limit` as a
    per-minute figure (5000, remaining 4999, reset "12ms": 83 a second), and then limit / 60 is the exact rate
    (remaining is rounded to whole units: near full, the ratio alone can be twice the rate); a `limit` that is the
    bucket's size (some gateways) is read from the ratio, and only well below full, where rounding cannot mislead."""
    missing = limit - remaining
    if missing < 2 or reset <= 0:
        return None
    reading, per_minute = missing / reset, limit / 60.0
    if per_minute <= 1.25 * reading and reading <= 4.0 * per_minute:
        return per_minute
    if missing >= LEARN_DEFICIT * limit and math.isfinite(reading):
        return reading
    return None


def _number(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        n = float(value)
    except ValueError:
        return None
    return n if n >= 0 and n == n and n != float("inf") else None  # Azure sends -1 for "not reported"
