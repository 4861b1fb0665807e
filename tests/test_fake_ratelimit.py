"""The fake server's rate limits (tests/fake_ratelimit.py): token buckets, 429s with retry-after, the providers'
rate-limit headers, GET /stats; unit-level with a fake clock, then through the real SDKs on 127.0.0.1."""

from __future__ import annotations

import argparse
import json
import urllib.request
from datetime import datetime
from typing import Any

import anthropic
import openai
import pytest
from aiohttp import web

from tests.fake_ratelimit import (
    RateLimiter,
    RateLimitPolicy,
    TokenBucket,
    add_arguments,
    go_duration,
    policy_from_args,
    prompt_tokens,
    rfc3339,
)
from tests.fake_server import FakeServer


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def limiter(policy: RateLimitPolicy) -> tuple[RateLimiter, Clock]:
    clock = Clock()
    return RateLimiter(policy, clock=clock, wall=lambda: 1_700_000_000.0 + clock.now), clock


def served_stats(server: FakeServer) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/stats", timeout=10) as reply:
        return dict(json.load(reply))


def refused(lim: RateLimiter, prompt: str = "x", anthropic: bool = False) -> web.HTTPException:
    with pytest.raises(web.HTTPException) as caught:
        lim.take(prompt, anthropic)
    return caught.value


def test_token_bucket_starts_full_refills_at_its_rate_and_caps_at_capacity() -> None:
    bucket = TokenBucket(rate=10, capacity=5, now=0.0)
    assert bucket.wait(5, 0.0) == 0.0
    bucket.take(5, 0.0)
    assert bucket.wait(1, 0.0) == pytest.approx(0.1)
    assert bucket.wait(3, 0.2) == pytest.approx(0.1)  # 2 back after 0.2 s
    assert bucket.until_full(0.2) == pytest.approx(0.3)
    assert bucket.wait(5, 60.0) == 0.0 and bucket.level == 5  # never above capacity
    assert bucket.wait(6, 60.0) == float("inf")  # more than it can ever hold
    with pytest.raises(ValueError):
        TokenBucket(rate=0, capacity=1, now=0.0)


def test_formats_and_token_count() -> None:
    assert [go_duration(s) for s in (0, 0.0004, 0.12, 1, 1.5, 59.25, 90, 360, 3600)] == [
        "0s", "1ms", "120ms", "1s", "1.5s", "59.25s", "1m30s", "6m0s", "1h0m0s"
    ]  # fmt: skip
    assert rfc3339(1_700_000_000.25) == "2023-11-14T22:13:20.250Z"
    assert prompt_tokens("") == 0 and prompt_tokens("abcd") == 1 and prompt_tokens("abcde") == 2
    assert prompt_tokens("é" * 4) == 2  # bytes, not characters


def test_requests_limit_refuses_beyond_the_bucket_with_retry_after_until_it_has_room() -> None:
    lim, clock = limiter(RateLimitPolicy(rps=2, headers="openai"))
    assert lim.take("a", False) == {  # as OpenAI documents them: the limit per minute, what is left of it
        "x-ratelimit-limit-requests": "120",
        "x-ratelimit-remaining-requests": "119",
        "x-ratelimit-reset-requests": "500ms",
    }
    lim.take("b", False)
    error = refused(lim)
    assert error.status == 429
    assert error.headers["retry-after-ms"] == "500" and error.headers["retry-after"] == "1"
    assert error.headers["x-ratelimit-remaining-requests"] == "118"
    assert error.headers["x-ratelimit-reset-requests"] == "1s"
    body = json.loads(error.text or "")
    assert body["error"]["code"] == "rate_limit_exceeded" and body["error"]["type"] == "requests"
    clock.now += 0.5
    lim.take("c", False)  # room again after retry-after-ms
    assert lim.stats() == {
        "admitted": 3,
        "admitted_prompt_tokens": 3,
        "rate_limited": 1,
        "rate_limited_requests": 1,
        "rate_limited_tokens": 0,
        "too_large": 0,
    }


def test_tokens_limit_counts_prompt_tokens_and_a_prompt_over_the_bucket_is_a_400() -> None:
    lim, clock = limiter(RateLimitPolicy(tpm=6000, headers="anthropic", retry_after_ms=False))  # 100 tokens/s
    headers = lim.take("x" * 240, anthropic=True)  # 60 tokens
    assert headers["anthropic-ratelimit-input-tokens-limit"] == "6000"
    assert headers["anthropic-ratelimit-input-tokens-remaining"] == "5940"
    reset = datetime.fromisoformat(headers["anthropic-ratelimit-input-tokens-reset"])
    assert reset.timestamp() == pytest.approx(1_700_000_000.0 + clock.now + 0.6)
    assert not any("requests" in h for h in headers)  # no request limit, no request headers
    error = refused(lim, "x" * 240, anthropic=True)
    assert error.status == 429 and error.headers["retry-after"] == "1" and "retry-after-ms" not in error.headers
    assert json.loads(error.text or "")["error"]["type"] == "rate_limit_error"
    assert refused(lim, "x" * 404).status == 400  # 101 tokens: never fits
    assert lim.stats()["rate_limited_tokens"] == 1 and lim.stats()["too_large"] == 1


def test_both_limits_refuse_on_the_one_that_is_short_and_take_from_neither() -> None:
    lim, clock = limiter(RateLimitPolicy(rps=10, rps_burst=1, tpm=60_000, tpm_burst=100))
    lim.take("x" * 40, False)  # 10 tokens; the request bucket is now empty
    error = refused(lim, "x" * 40)
    assert json.loads(error.text or "")["error"]["type"] == "requests"
    assert lim.buckets["tokens"].level == pytest.approx(90)  # the refused request took nothing
    clock.now += 0.2
    assert lim.take("x", False) == {}  # no header style: no headers


def test_headers_lag_the_bucket_and_429s_may_carry_no_retry_after() -> None:
    lim, clock = limiter(RateLimitPolicy(rps=1, rps_burst=5, headers="openai", header_lag=0.5, retry_after=False))
    first = lim.take("a", False)
    assert (first["x-ratelimit-remaining-requests"], first["x-ratelimit-reset-requests"]) == ("59", "1s")
    clock.now += 0.1
    for _ in range(3):  # 3.9 missing now; the counters last read 1 missing and still say so
        assert lim.take("a", False) == first
    clock.now += 0.4  # half a second after the last reading: read again (4.5 missing after this one)
    fresh = lim.take("a", False)
    assert (fresh["x-ratelimit-remaining-requests"], fresh["x-ratelimit-reset-requests"]) == ("55", "4.5s")
    error = refused(lim)
    assert "retry-after" not in error.headers and "retry-after-ms" not in error.headers


def test_policy_flags_are_off_by_default() -> None:
    p = argparse.ArgumentParser()
    add_arguments(p)
    assert policy_from_args(p.parse_args([])) is None
    policy = policy_from_args(p.parse_args(["--rps-limit", "200", "--ratelimit-headers", "openai"]))
    assert policy == RateLimitPolicy(rps=200, headers="openai")
    flags = ["--rps-limit", "200", "--rps-burst", "20", "--header-lag", "0.5", "--no-retry-after"]
    assert policy_from_args(p.parse_args(flags)) == RateLimitPolicy(rps=200, rps_burst=20, header_lag=0.5,
                                                                    retry_after=False)  # fmt: skip
    with pytest.raises(ValueError):
        RateLimitPolicy(headers="google")


def test_a_server_without_a_policy_sends_no_rate_limit_headers() -> None:
    with FakeServer() as server:
        client = openai.OpenAI(api_key="k", base_url=server.openai_url, max_retries=0)
        raw = client.chat.completions.with_raw_response.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert not [h for h in raw.headers if "ratelimit" in h]
        assert server.limiter is None and server.served == 1


def test_openai_sdk_meets_the_429_and_the_headers() -> None:
    policy = RateLimitPolicy(rps=1, headers="openai")  # a bucket of 1 refilled each second: the second is refused
    with FakeServer(rate_limit=policy) as server:
        client = openai.OpenAI(api_key="k", base_url=server.openai_url, max_retries=0)
        message = [{"role": "user", "content": "hi"}]
        raw = client.chat.completions.with_raw_response.create(model="m", messages=message)  # type: ignore[arg-type]
        assert raw.parse().choices[0].message.content
        assert raw.headers["x-ratelimit-limit-requests"] == "60"  # OpenAI's own example: 60, 59, "1s"
        assert raw.headers["x-ratelimit-remaining-requests"] == "59"
        assert raw.headers["x-ratelimit-reset-requests"] == "1s"
        with pytest.raises(openai.RateLimitError) as caught:
            client.chat.completions.create(model="m", messages=message)  # type: ignore[arg-type]
        headers = caught.value.response.headers
        assert 0 < int(headers["retry-after-ms"]) <= 1000 and headers["retry-after"] == "1"
        assert headers["x-ratelimit-reset-requests"].endswith("ms")
        assert [c.action for c in server.calls] == ["ok", "limited"]
        stats = served_stats(server)
        assert stats["served"] == 1 and stats["rate_limit"]["rate_limited"] == 1


def test_anthropic_sdk_meets_the_429_and_the_headers() -> None:
    policy = RateLimitPolicy(rps=1, tpm=600_000, headers="anthropic")
    with FakeServer(rate_limit=policy) as server:
        client = anthropic.Anthropic(api_key="k", base_url=server.anthropic_url, max_retries=0)
        message = [{"role": "user", "content": "hi"}]
        raw = client.messages.with_raw_response.create(model="m", max_tokens=20, messages=message)  # type: ignore[arg-type]
        assert raw.parse().content
        assert raw.headers["anthropic-ratelimit-requests-remaining"] == "59"
        assert raw.headers["anthropic-ratelimit-input-tokens-limit"] == "600000"
        assert datetime.fromisoformat(raw.headers["anthropic-ratelimit-requests-reset"]).tzinfo is not None
        with pytest.raises(anthropic.RateLimitError) as caught:
            client.messages.create(model="m", max_tokens=20, messages=message)  # type: ignore[arg-type]
        assert caught.value.body["error"]["type"] == "rate_limit_error"  # type: ignore[index]
        assert "retry-after" in caught.value.response.headers
        assert server.limiter is not None
        stats = {"served": 1, "max_in_flight": 1, "rate_limit": server.limiter.stats(), "slots": None}  # no --slots
        assert served_stats(server) == stats
