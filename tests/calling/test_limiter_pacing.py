"""The limiter's pacing against a provider's strict limit (issue 33): per-minute limits read from headers, the first
wave spread out, and the rate a 429 teaches, cut and probed back along CUBIC's curve. Virtual or fake clocks only."""

from __future__ import annotations

import asyncio
import math

import pytest

from harness.calling.limiter import CUT, PACE, PROBE_CUT, PROBE_K, START_BURST, START_RATE, Limiter
from harness.calling.limits import rate_limit, refill_rate
from tests.virtual_clock import VirtualClockLoop, run_virtual


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_per_minute_limit_gives_the_exact_refill_rate_even_near_full() -> None:
    # OpenAI's documented headers: 12,000 a minute is 200 a second; 15 missing come back in 75 ms.
    said = rate_limit({"x-ratelimit-limit-requests": "12000", "x-ratelimit-remaining-requests": "11985",
                       "x-ratelimit-reset-requests": "75ms"})  # fmt: skip
    assert said is not None and said.requests_limit is not None and said.requests_remaining is not None
    assert said.requests_reset is not None
    assert refill_rate(said.requests_limit, said.requests_remaining, said.requests_reset) == 200.0
    # remaining is rounded to whole requests: 2.3 missing show as 3, and 3 / 11.5 ms reads 261 a second, not 200.
    assert refill_rate(12000, 11997, 0.0115) == 200.0
    assert refill_rate(12000, 11999, 0.005) is None  # one missing: too little to read
    # Up to 4x the per-minute figure is still read as that figure (rounding and lagging headers), not beyond.
    assert refill_rate(6000, 5650, 1.0) == 100.0  # 350 a second read, 100 a second said: the said one
    # A limit that is the bucket's size (a gateway: 20, 15 missing, back in 75 ms) is read from the ratio ...
    assert refill_rate(20, 5, 0.075) == pytest.approx(200.0)
    # ... but only while a tenth of the bucket or more is missing: 5 of 100 is too near full to trust.
    assert refill_rate(100, 95, 0.01) is None
    clock = Clock()
    lim = Limiter(128, clock=clock)
    lim.in_flight = 1
    lim.release(clock.now, ok=True, limits=said)
    assert lim.requests is not None and lim.requests.rate == pytest.approx(PACE * 200)


def test_the_first_wave_is_spread_until_a_window_of_answers() -> None:
    async def scenario(loop: VirtualClockLoop) -> tuple[list[float], list[float]]:
        lim = Limiter(128, clock=loop.time)
        lim.window, lim.slow = 128.0, False  # a first wave the window does not bound (as after `serves`)
        left: list[float] = []

        async def one() -> float:
            sent = await lim.acquire()
            left.append(loop.time())
            return sent

        first = [asyncio.create_task(one()) for _ in range(64)]
        sent = await asyncio.gather(*first)
        for at in sent:  # answers to all 64: no limit met within a round trip, but the first wave is not over
            lim.release(at, ok=True)
        assert lim.start is not None
        for _ in range(64):  # a window's worth of answers (the ceiling's): it is
            lim.in_flight += 1
            lim.release(loop.time(), ok=True)
        later: list[float] = []
        for _ in range(32):
            await lim.acquire()
            later.append(loop.time())
        return left, later

    left, later = run_virtual(scenario)
    burst = int(START_BURST)
    assert left[:burst] == pytest.approx([0.0] * burst, abs=1e-12)
    assert left[burst:] == pytest.approx([(i + 1) / START_RATE for i in range(64 - burst)])
    assert later == [later[0]] * 32  # after a window of answers, nothing spreads them


def test_a_429_without_headers_cuts_the_rate_and_cubic_probes_it_back() -> None:
    clock = Clock()
    lim = Limiter(128, clock=clock)
    lim.in_flight = 21  # 20 answers on their way, and the request refused
    lim.release(clock.now, ok=False, limited=True)
    assert lim.probe is not None and lim.probe.rate == pytest.approx(PROBE_CUT * 21 / 0.1)
    top = 21 / 0.1
    lim.release(clock.now, ok=False, limited=True)  # sent before the cut: old news, no second cut
    assert lim.probe.rate == pytest.approx(PROBE_CUT * top)
    lim.in_flight = 3
    for at, share in ((0.5, 1 - (1 - PROBE_CUT) / 8), (1.0, 1.0), (1.5, 1 + (1 - PROBE_CUT) / 8)):
        clock.now = 100.0 + at * PROBE_K
        lim.release(clock.now - 0.1, ok=True)
        assert lim.probe.rate == pytest.approx(share * top), at
    assert lim.report().probed_rpm == pytest.approx(60 * lim.probe.rate, abs=0.1)
    lim.in_flight = 2
    lim.release(clock.now, ok=False, limited=True)  # sent after the cut: news, cut from where the probe was
    # Since the last cut 3 answers and 2 refusals: 60 % of attempts got through, so the cut is to 60 %, not 90 %.
    assert lim.probe.rate == pytest.approx(0.6 * top * (1 + (1 - PROBE_CUT) / 8))
    peak = top * (1 + (1 - PROBE_CUT) / 8)
    clock.now += 0.5 * PROBE_K  # the curve starts at 60 % this time, and is back at the peak in K seconds
    lim.in_flight = 21
    lim.release(clock.now - 0.1, ok=True)
    assert lim.probe.rate == pytest.approx(peak * (1 - 0.4 / 8))
    for _ in range(19):  # sent before that cut: one answer and 19 refusals since
        lim.release(clock.now - 1.0, ok=False, limited=True)
    lim.release(clock.now, ok=False, limited=True)  # news: far above the limit, cut by half (at most)
    assert lim.probe.rate == pytest.approx(CUT * peak * (1 - 0.4 / 8))


def test_while_the_probe_paces_the_halved_window_does_not_bind() -> None:
    clock = Clock()
    lim = Limiter(128, clock=clock)
    lim.window, lim.slow = 128.0, False  # past slow start
    lim.in_flight = 40
    lim.release(clock.now, ok=False, limited=True)
    assert lim.window == 64 and lim.probe is not None
    for _ in range(6):  # six more overshoots a round trip apart: the window alone would be down to 1
        clock.now += 1.0
        lim.release(clock.now - 0.05, ok=False, limited=True)
    assert lim.window == 1.0
    assert lim._cap() == math.ceil(2 * lim.probe.rate * lim.rtt) > 1  # room for twice what the pace keeps out


def test_the_users_rpm_is_not_cut_by_429s() -> None:
    clock = Clock()
    lim = Limiter(128, rpm=6000, clock=clock)
    lim.in_flight = 3
    lim.release(clock.now, ok=False, limited=True)
    assert lim.probe is None and lim.requests is not None and lim.requests.rate == 100.0
