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
from harness.types import Completion, Request
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
