"""Dispatch's default settings against a rate limit served as providers serve it (issue 33), on a virtual clock.

A token bucket of 200 requests a second with a burst allowance of 20 (a provider that "quantizes" its per-minute
limit), 429s answered at once, headers as OpenAI and Anthropic document them (a per-minute limit, lagging the
bucket by half a second), or retry-after alone, or nothing at all. With the default options (128 in flight) a run
must get at least 95 % of the limit with at most 3 % of its attempts refused, in every mode; before issue 33 the
defaults got 88 % with 7.8 % refused. On a virtual clock (tests/virtual_clock.py) the numbers are exact and a busy
machine cannot change them; tests/bench/bench_vs_lmeval.py measures the same on the wall clock.
"""

from __future__ import annotations

import asyncio

import pytest
from aiohttp import web

from harness.calling.backends.base import RetryableError
from harness.calling.dispatch import complete_all
from harness.calling.limits import rate_limit
from harness.calling.options import DispatchOptions, DispatchStats
from harness.types import Completion, HarnessError, Request
from tests.calling.test_dispatch_limits import WALL, on_virtual_clock
from tests.fake_ratelimit import RateLimiter, RateLimitPolicy
from tests.stub_backend import StubBackend
from tests.virtual_clock import VirtualClockLoop

RPS, BURST, LAG = 200, 20, 0.5


class Provider(StubBackend):
    """A provider in virtual time: a request reaches the bucket `net` seconds after it left; a 429 is back `net`
    later, an answer `latency` later (as tests/fake_server.py answers: 429s at once, answers after --latency)."""

    name = "provider"

    def __init__(self, policy: RateLimitPolicy, latency: float = 0.1, net: float = 0.001) -> None:
        self.policy, self.latency, self.net = policy, latency, net
        self.server: RateLimiter | None = None
        self.first_sent = self.last_answer = 0.0

    async def send(self, request: Request) -> Completion:
        loop = asyncio.get_running_loop()
        assert isinstance(loop, VirtualClockLoop)
        if self.server is None:
            self.server = RateLimiter(self.policy, clock=loop.time, wall=lambda: WALL + loop.time())
            self.first_sent = loop.time()
        await asyncio.sleep(self.net)
        try:
            headers = self.server.take(request.prompt, anthropic=self.policy.headers == "anthropic")
        except web.HTTPTooManyRequests as e:
            await asyncio.sleep(self.net)
            said = {k.lower(): v for k, v in e.headers.items()}
            wait = int(said["retry-after-ms"]) / 1000 if "retry-after-ms" in said else None
            limits = rate_limit(said, now=WALL + loop.time())
            raise RetryableError("429", retry_after=wait, limited=True, rate_limit=limits) from None
        await asyncio.sleep(self.latency)
        self.last_answer = loop.time()
        return Completion(request.id, "3", rate_limit=rate_limit(headers, now=WALL + loop.time()))


MODES = {
    "retry-after only": RateLimitPolicy(rps=RPS, rps_burst=BURST),
    "openai headers": RateLimitPolicy(rps=RPS, rps_burst=BURST, headers="openai", header_lag=LAG),
    "anthropic headers": RateLimitPolicy(rps=RPS, rps_burst=BURST, headers="anthropic", header_lag=LAG),
    "no header": RateLimitPolicy(rps=RPS, rps_burst=BURST, retry_after=False),
}


@pytest.mark.parametrize("mode", list(MODES))
def test_default_settings_reach_95_percent_of_a_strict_limit_with_few_429s(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    on_virtual_clock(monkeypatch)
    backend, n = Provider(MODES[mode]), 2000
    stats = DispatchStats()
    requests = [Request(str(i), f"Sentence 1: item {i}. Output:") for i in range(n)]
    done = complete_all(backend, requests, options=DispatchOptions(), stats=stats)
    assert stats.errors == 0 and len(done) == n
    assert backend.server is not None
    served = backend.server.stats()
    refused = served["rate_limited"] / (served["admitted"] + served["rate_limited"])
    # Net of the bucket's starting content: what the limit allowed over the run, not the free burst.
    goodput = (served["admitted"] - BURST) / (backend.last_answer - backend.first_sent) / RPS
    assert served["admitted"] == n
    assert goodput >= 0.95 and refused <= 0.03, f"{mode}: {goodput:.1%} of the limit, {refused:.1%} refused"


class TinyTokenLimit(StubBackend):
    """A server whose headers say its token limit is 3 a minute (spent, back in 20 s), and that answers anyway: a
    gateway's wrong figure, or a real limit no prompt fits under (a real one would refuse with 429s)."""

    name = "tiny"

    def __init__(self) -> None:
        self.sent: list[float] = []

    async def send(self, request: Request) -> Completion:
        loop = asyncio.get_running_loop()
        self.sent.append(loop.time())
        await asyncio.sleep(0.1)
        said = {"x-ratelimit-limit-tokens": "3", "x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "20s"}
        return Completion(request.id, "3", rate_limit=rate_limit(said))


def test_a_token_limit_smaller_than_one_prompt_stops_the_run_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 41: paced to 3 tokens a minute, a 50-token prompt left every 34 minutes, with no end in sight (the run
    of 40 sent its last request after 19.8 virtual hours). No prompt that size can fit under that limit: the run
    stops at the first request sent after the limit was read, naming the limit and the prompt's tokens."""
    on_virtual_clock(monkeypatch)
    backend = TinyTokenLimit()
    requests = [Request(str(i), f"{i:03d} " + "x" * 196) for i in range(40)]  # 200 bytes: about 50 tokens
    with pytest.raises(HarnessError) as raised:
        complete_all(backend, requests, options=DispatchOptions(concurrency=4), stats=DispatchStats())
    said = str(raised.value)
    assert "a token limit of 3 a minute" in said and "this prompt's 50 tokens" in said and "--tpm" in said, said
    assert len(backend.sent) == 4 and max(backend.sent) < 0.01  # the first wave, sent before the limit was known


def test_a_users_tpm_smaller_than_one_prompt_stops_before_anything_is_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    on_virtual_clock(monkeypatch)
    backend = TinyTokenLimit()
    requests = [Request(str(i), "x" * 200) for i in range(5)]
    with pytest.raises(HarnessError, match=r"--tpm 30 is fewer tokens a minute than this prompt's 50"):
        complete_all(backend, requests, options=DispatchOptions(tpm=30), stats=DispatchStats())
    assert backend.sent == []
