"""Rate limits for tests/fake_server.py: token buckets on requests per second and on prompt tokens per minute,
429s beyond them, and the providers' rate-limit headers.

Each limit is a token bucket that starts full and refills continuously (as Anthropic documents its limits, and
as OpenAI's headers describe them): `--rps-limit R` refills R requests a second into a bucket of `--rps-burst`
(default R, one second's worth); `--tpm-limit T` refills T/60 prompt tokens a second into a bucket of
`--tpm-burst` (default T/60, one second's worth, so the limit binds from the start rather than after a minute
of burst). A request is admitted only when every bucket has room for it (one request; its prompt tokens), and
then takes from each. Otherwise it is answered at once (no model latency) with 429 and
`retry-after-ms` (milliseconds until the fullest-short bucket has room) and `retry-after` (the same, whole
seconds rounded up, as HTTP writes it); `retry_after_ms=False` sends only `retry-after`, as Anthropic does. A
prompt larger than the token bucket can ever hold gets a 400 (retrying could never help).

Prompt tokens are counted crudely: ceil(UTF-8 bytes / 4) of the prompt text (about what a BPE tokenizer gives
for English), so a client can compute the same number.

Rate-limit headers (`headers="openai"` or `"anthropic"`), on every reply to a limited endpoint, 429s included, as
the providers document them: the limit is a per-minute figure, not the bucket's size, so they do not reveal how
small a burst the bucket allows (OpenAI: limits "may be quantized", enforced over shorter periods), and what is
missing from the bucket shows as `limit - remaining`:
- openai: `x-ratelimit-limit-requests` (requests per minute: OpenAI's example is 60), `x-ratelimit-remaining-requests`
  (the limit less what is missing from the bucket, rounded up to whole requests: 59 after one), and
  `x-ratelimit-reset-requests` (the time until the bucket is full again, as a Go duration: "1s", "120ms", "6m0s"),
  and the `-tokens` trio (tokens per minute). (limit - remaining) / reset is then the refill rate, as with OpenAI's
  (60 RPM, remaining 59, reset "1s"; 5000 RPM, remaining 4999, reset "12ms").
- anthropic: `anthropic-ratelimit-requests-limit` / `-remaining` / `-reset` (RFC 3339 UTC time at which the
  bucket is full again, with milliseconds: "2025-01-15T14:24:00.120Z") and `anthropic-ratelimit-input-tokens-*`.
`header_lag` (`--header-lag S`) makes the headers lag the bucket, as a provider's distributed counters do: they
describe it as it was when last read, at most S seconds ago (the buckets themselves are always current).
`retry_after=False` (`--no-retry-after`) sends 429s with no retry-after of any kind.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple

from aiohttp import web

HEADER_STYLES = ("openai", "anthropic")
# Where admit() leaves, on the request, the headers for its reply and the refusal to answer with instead.
_RequestKey: Any = getattr(web, "RequestKey", None)  # aiohttp >= 3.12 asks for typed keys; plain strings before
HEADERS: Any = _RequestKey("ratelimit", dict) if _RequestKey else "ratelimit"
REFUSAL: Any = _RequestKey("ratelimit_refusal", web.HTTPException) if _RequestKey else "ratelimit_refusal"


def prompt_tokens(text: str) -> int:
    """The fake server's token count: ceil(UTF-8 bytes / 4)."""
    return -(-len(text.encode("utf-8")) // 4)


def go_duration(seconds: float) -> str:
    """A duration as Go prints it (OpenAI's reset headers): "0s", "120ms", "1s", "1.5s", "1m30s", "1h0m0s"."""
    if seconds <= 0:
        return "0s"
    if seconds < 1:
        return f"{max(1, round(seconds * 1000))}ms"
    hours, rest = divmod(round(seconds, 3), 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{secs:.3f}".rstrip("0").rstrip(".") + "s"
    if hours:
        return f"{int(hours)}h{int(minutes)}m{text}"
    return f"{int(minutes)}m{text}" if minutes else text


def rfc3339(epoch: float) -> str:
    """A UTC time as RFC 3339 with milliseconds (Anthropic's reset headers)."""
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class TokenBucket:
    """`capacity` tokens at most, refilled at `rate` tokens a second; starts full."""

    def __init__(self, rate: float, capacity: float, now: float) -> None:
        if rate <= 0 or capacity <= 0:
            raise ValueError("a token bucket needs a positive rate and capacity")
        self.rate = rate
        self.capacity = capacity
        self.level = capacity
        self.stamp = now

    def refill(self, now: float) -> None:
        if now > self.stamp:
            self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
            self.stamp = now

    def wait(self, amount: float, now: float) -> float:
        """Seconds until `amount` tokens are there (0: now); infinite when more than the capacity."""
        if amount > self.capacity:
            return math.inf
        self.refill(now)
        return max(0.0, (amount - self.level) / self.rate)

    def take(self, amount: float, now: float) -> None:
        self.refill(now)
        self.level -= amount

    def until_full(self, now: float) -> float:
        self.refill(now)
        return (self.capacity - self.level) / self.rate


@dataclass(frozen=True)
class RateLimitPolicy:
    """What the server enforces and says; everything off by default."""

    rps: float | None = None  # requests per second
    rps_burst: float | None = None  # the request bucket's capacity; None: one second's worth (rps)
    tpm: float | None = None  # prompt tokens per minute
    tpm_burst: float | None = None  # the token bucket's capacity; None: one second's worth (tpm / 60)
    headers: str | None = None  # "openai" | "anthropic": rate-limit headers on every reply
    retry_after_ms: bool = True  # send retry-after-ms with 429s (besides retry-after)
    header_lag: float = 0.0  # seconds: the headers describe the buckets as last read, at most this long ago
    retry_after: bool = True  # False: 429s carry no retry-after (nor retry-after-ms)

    def __post_init__(self) -> None:
        if self.headers is not None and self.headers not in HEADER_STYLES:
            raise ValueError(f"headers must be one of {HEADER_STYLES}, not {self.headers!r}")


class Refusal(NamedTuple):
    kind: str  # "requests" or "tokens": the bucket that was short
    wait: float  # seconds until it has room


class RateLimiter:
    """The policy's buckets, what it refused, and the headers and 429 bodies it answers with."""

    def __init__(
        self,
        policy: RateLimitPolicy,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.policy = policy
        self.clock = clock
        self.wall = wall
        now = clock()
        self.buckets: dict[str, TokenBucket] = {}
        if policy.rps:
            self.buckets["requests"] = TokenBucket(policy.rps, policy.rps_burst or policy.rps, now)
        if policy.tpm:
            self.buckets["tokens"] = TokenBucket(policy.tpm / 60, policy.tpm_burst or policy.tpm / 60, now)
        self.admitted = 0
        self.admitted_tokens = 0
        self.refused = {"requests": 0, "tokens": 0}
        self.too_large = 0
        self.read_at, self.missing = -math.inf, dict[str, float]()  # the buckets' deficits when headers last read them

    def admit(self, request: web.Request, prompt: str, action: str) -> str:
        """Admit a request with this prompt: `action` when the buckets have room (taking from them; the headers
        for its reply in request[HEADERS]), else "limited" with request[REFUSAL] the 429 (or, for a prompt no
        bucket could ever hold, the 400) to answer with at once."""
        try:
            request[HEADERS] = self.take(prompt, anthropic=request.path == "/v1/messages")
        except web.HTTPException as refusal:
            request[REFUSAL] = refusal
            return "limited"
        return action

    def take(self, prompt: str, anthropic: bool) -> dict[str, str]:
        """Take one request with this prompt from the buckets and return the headers for its reply; raise the
        429 or 400 to answer with instead."""
        now = self.clock()
        tokens = prompt_tokens(prompt)
        amounts = {"requests": 1, "tokens": tokens}
        waits = {kind: bucket.wait(amounts[kind], now) for kind, bucket in self.buckets.items()}
        longest = max(waits, key=lambda k: waits[k], default=None)
        if longest is not None and math.isinf(waits[longest]):
            self.too_large += 1
            capacity = self.buckets[longest].capacity
            message = f"Request too large for the {longest} limit: needs {amounts[longest]}, the most is {capacity:g}"
            raise web.HTTPBadRequest(text=error_body(message, "invalid_request_error", anthropic), **_JSON)
        if longest is not None and waits[longest] > 0:
            self.refused[longest] += 1
            raise self._too_many(Refusal(longest, waits[longest]), anthropic, now)
        for kind, bucket in self.buckets.items():
            bucket.take(amounts[kind], now)
        self.admitted += 1
        self.admitted_tokens += tokens
        return self.headers(now)

    def headers(self, now: float) -> dict[str, str]:
        """The rate-limit headers in the policy's style ({} without one), per minute as the providers send them."""
        style = self.policy.headers
        out: dict[str, str] = {}
        if style is None:
            return out
        if now - self.read_at >= self.policy.header_lag:  # else the lagging counters still show the last reading
            self.read_at = now
            for kind, bucket in self.buckets.items():
                bucket.refill(now)
                self.missing[kind] = bucket.capacity - bucket.level
        for kind, bucket in self.buckets.items():
            per_minute, missing = round(bucket.rate * 60), self.missing[kind]
            limit, remaining = str(per_minute), str(max(0, per_minute - math.ceil(missing - 1e-9)))
            if style == "openai":
                out[f"x-ratelimit-limit-{kind}"] = limit
                out[f"x-ratelimit-remaining-{kind}"] = remaining
                out[f"x-ratelimit-reset-{kind}"] = go_duration(missing / bucket.rate)
            else:
                name = "requests" if kind == "requests" else "input-tokens"
                out[f"anthropic-ratelimit-{name}-limit"] = limit
                out[f"anthropic-ratelimit-{name}-remaining"] = remaining
                out[f"anthropic-ratelimit-{name}-reset"] = rfc3339(self.wall() + missing / bucket.rate)
        return out

    def _too_many(self, refusal: Refusal, anthropic: bool, now: float) -> web.HTTPTooManyRequests:
        headers = self.headers(now)
        if self.policy.retry_after:
            headers["retry-after"] = str(max(1, math.ceil(refusal.wait)))
        if self.policy.retry_after and self.policy.retry_after_ms:
            headers["retry-after-ms"] = str(max(1, math.ceil(refusal.wait * 1000)))
        per = "requests per second (RPS)" if refusal.kind == "requests" else "prompt tokens per minute (TPM)"
        message = f"Rate limit reached on {per}. Please try again in {refusal.wait * 1000:.0f}ms."
        kind = "rate_limit_error" if anthropic else refusal.kind
        return web.HTTPTooManyRequests(text=error_body(message, kind, anthropic), headers=headers, **_JSON)

    def stats(self) -> dict[str, Any]:
        return {
            "admitted": self.admitted,
            "admitted_prompt_tokens": self.admitted_tokens,
            "rate_limited": sum(self.refused.values()),
            "rate_limited_requests": self.refused["requests"],
            "rate_limited_tokens": self.refused["tokens"],
            "too_large": self.too_large,
        }


_JSON: dict[str, Any] = {"content_type": "application/json"}


def error_body(message: str, kind: str, anthropic: bool) -> str:
    """An error body in the provider's format (OpenAI's 429s: type "requests"/"tokens", code rate_limit_exceeded)."""
    if anthropic:
        return json.dumps({"type": "error", "error": {"type": kind, "message": message}})
    code = "rate_limit_exceeded" if kind in ("requests", "tokens") else None
    return json.dumps({"error": {"message": message, "type": kind, "param": None, "code": code}})


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The server's command-line flags for a policy (all off by default)."""
    p.add_argument("--rps-limit", type=float, help="requests per second (token bucket); 429 beyond")
    p.add_argument("--rps-burst", type=float, help="the request bucket's capacity (default: one second's worth)")
    p.add_argument("--tpm-limit", type=float, help="prompt tokens (ceil(bytes/4)) per minute (token bucket)")
    p.add_argument("--tpm-burst", type=float, help="the token bucket's capacity (default: one second's worth)")
    p.add_argument("--ratelimit-headers", choices=HEADER_STYLES, help="rate-limit headers on every reply")
    p.add_argument("--no-retry-after-ms", action="store_true", help="429s carry retry-after only (as Anthropic's)")
    p.add_argument("--no-retry-after", action="store_true", help="429s carry no retry-after of any kind")
    p.add_argument("--header-lag", type=float, default=0.0, help="seconds the rate-limit headers may lag the buckets")


def policy_from_args(a: argparse.Namespace) -> RateLimitPolicy | None:
    """The policy the flags ask for; None when they ask for none."""
    if not (a.rps_limit or a.tpm_limit or a.ratelimit_headers):
        return None
    return RateLimitPolicy(
        a.rps_limit, a.rps_burst, a.tpm_limit, a.tpm_burst, a.ratelimit_headers, not a.no_retry_after_ms,
        a.header_lag, not a.no_retry_after,
    )  # fmt: skip


def event_loop_runner() -> Callable[[Coroutine[Any, Any, None]], None]:
    """uvloop's run when it is installed (less CPU per request for the benchmark server), else asyncio's."""
    try:
        from uvloop import run  # type: ignore[import-not-found]
    except ImportError:
        return asyncio.run
    return run  # type: ignore[no-any-return]
