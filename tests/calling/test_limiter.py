"""The limiter (harness/calling/limiter.py): AIMD window, GCRA pacing, limits learned from headers, slots."""

from __future__ import annotations

import asyncio
import math
from collections import Counter

import pytest

from harness.calling.limiter import CUT, INITIAL_WINDOW, LEARN_WEIGHT, PACE, Limiter, Pacer
from harness.calling.server_queue import QUEUE_POLL, QUEUED, STALE
from harness.types import RateLimit, ServerQueue
from tests.virtual_clock import VirtualClockLoop, run_virtual


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def limiter(ceiling: int = 64, **kw: float) -> tuple[Limiter, Clock]:
    """A limiter past its slow start: the window at the ceiling (tests of what comes after)."""
    clock = Clock()
    lim = Limiter(ceiling, clock=clock, **kw)  # type: ignore[arg-type]
    lim.window, lim.slow = float(ceiling), False
    return lim, clock


def test_slow_start_doubles_the_window_each_round_trip_to_the_ceiling_and_a_429_cuts_it() -> None:
    clock = Clock()
    lim = Limiter(64, clock=clock)
    assert lim.window == INITIAL_WINDOW and lim.slow
    for _ in range(64 - INITIAL_WINDOW):  # one more per answer: a window's worth of answers doubles it
        lim.in_flight = 1
        lim.release(clock.now - 0.1, ok=True)
    assert lim.window == 64 and not lim.slow and lim.lowest == 64
    lim.in_flight = 10
    clock.now += 1
    lim.release(clock.now - 0.1, ok=False, limited=True)
    assert lim.window == 64 * CUT and lim.rate_limited == 1 and lim.lowest == 64 * CUT


def test_a_burst_of_429s_is_one_cut_per_round_trip() -> None:
    lim, clock = limiter(64)
    lim.in_flight = 40
    sent = clock.now
    clock.now += 0.2
    for _ in range(20):  # all sent before the first cut: one piece of news
        lim.release(sent, ok=False, limited=True)
    assert lim.window == 64 * CUT and lim.rate_limited == 20
    clock.now += 0.01  # sent after the cut, but within a round trip of it: still no second cut
    lim.release(clock.now, ok=False, limited=True)
    assert lim.window == 64 * CUT
    clock.now += 1.0  # a round trip later, a new overshoot: a second cut
    lim.release(clock.now - 0.05, ok=False, limited=True)
    assert lim.window == 64 * CUT * CUT


def test_window_grows_back_additively_to_the_ceiling_and_never_below_one() -> None:
    lim, clock = limiter(16)
    lim.in_flight = 200
    for i in range(10):
        clock.now += 1.0
        lim.release(clock.now - 0.01 * i, ok=False, limited=True)
    assert lim.window == 1.0
    successes = 0
    while lim.window < 8:  # about one more slot per window's worth of answers
        lim.release(clock.now - 0.1, ok=True)
        successes += 1
    assert 25 <= successes <= 40  # 1+2+...+7 = 28 answers to grow from 1 to 8
    for _ in range(1000):
        lim.release(clock.now - 0.1, ok=True)
    assert lim.window == 16


def test_errors_that_are_not_429s_leave_the_window_alone() -> None:
    lim, clock = limiter(32)
    lim.in_flight = 5
    lim.release(clock.now, ok=False)
    assert lim.window == 32 and lim.rate_limited == 0


def test_retry_after_pauses_new_requests() -> None:
    lim, clock = limiter(8)
    lim.in_flight = 1
    lim.release(clock.now, ok=False, limited=True, retry_after=2.5)
    assert lim.paused_until == clock.now + 2.5
    lim.in_flight = 1
    lim.release(clock.now, ok=False, limited=True, retry_after=10_000)  # capped: one bad header stalls nothing long
    assert lim.paused_until == clock.now + 60.0


def test_pacer_spaces_requests_at_its_rate_after_a_burst() -> None:
    pacer = Pacer(rate=10.0, burst=3.0)
    starts = []
    for _ in range(6):
        start = max(0.0, pacer.free_at(1.0))
        pacer.book(1.0, start)
        starts.append(start)
    assert starts[:3] == [0.0, 0.0, 0.0]  # the burst
    assert starts[3:] == pytest.approx([0.1, 0.2, 0.3])
    assert pacer.free_at(1.0) <= 5.0  # an idle bucket lets the next one go at once


def test_token_pacer_charges_by_cost() -> None:
    pacer = Pacer(rate=100.0, burst=100.0)
    assert pacer.free_at(100.0) <= 0.0
    pacer.book(100.0, 0.0)
    assert pacer.free_at(50.0) == pytest.approx(0.5)


def test_a_stall_lets_out_two_requests_at_once_not_the_backlog() -> None:
    """Requests are booked when they leave, not when they queue: after the process stalls, the queue resumes at
    the paced rate instead of sending everything that came due during the stall in one bunch. On a virtual clock
    (tests/virtual_clock.py): the stall is exact, and a busy machine's own stalls cannot add to it."""

    async def scenario(loop: VirtualClockLoop) -> list[float]:
        lim = Limiter(64, rpm=6000, clock=loop.time)  # 100 a second
        left: list[float] = []

        async def one() -> None:
            sent = await lim.acquire()
            left.append(loop.time())
            lim.release(sent, ok=True)

        tasks = [asyncio.create_task(one()) for _ in range(40)]
        await asyncio.sleep(0.05)
        loop.stall(0.3)  # the whole process stalls for 30 requests' worth of time
        await asyncio.gather(*tasks)
        return left

    left = run_virtual(scenario)
    at_once = Counter(round(t, 6) for t in left)
    # Before the stall: the bucket's two at 0, then one every 10 ms. After it (at 0.35 s): the one let out at 0.05 s,
    # just as the stall began, whose task only ran after it, and the bucket's two; then one every 10 ms again.
    # Booked in advance (as before this was fixed), the 30 that came due during the stall left together.
    assert max(at_once.values()) == 3 and at_once[0.35] == 3, sorted(at_once.items())
    assert left[-1] == pytest.approx(0.35 + 31 * 0.01), left  # the other 31 paced at 100 a second


def test_queued_requests_wait_out_a_pause_that_began_after_they_queued() -> None:
    async def scenario(loop: VirtualClockLoop) -> tuple[float, list[float]]:
        lim = Limiter(64, rpm=600, clock=loop.time)  # 10 a second: two leave at once, the third is due 0.1 s later
        left: list[float] = []
        paused = 0.0

        async def one(i: int) -> None:
            nonlocal paused
            sent = await lim.acquire()
            left.append(loop.time())
            if i == 0:  # the first answer, a round trip later, is a 429 asking for 0.3 s; the others queue meanwhile
                await asyncio.sleep(0.05)
                lim.release(sent, ok=False, limited=True, retry_after=0.3)
                paused = loop.time() + 0.3
            else:
                lim.release(sent, ok=True)

        await asyncio.gather(*(one(i) for i in range(5)))
        return paused, left

    paused, left = run_virtual(scenario)
    assert paused == pytest.approx(0.35)
    # Two at once, then the rest from the pause's end; booked in advance, the third would have left at 0.1 s.
    assert left[:2] == [0.0, 0.0] and left[2] == pytest.approx(paused) and all(t >= paused for t in left[2:]), left


def test_a_draining_bucket_in_the_headers_sets_the_pace() -> None:
    lim, clock = limiter(64)
    lim.in_flight = 3
    lim.release(clock.now, ok=True, limits=RateLimit(requests_limit=600, requests_remaining=599, requests_reset=0.1))
    assert lim.requests is None  # a nearly full bucket: a rounded header could mislead, and nothing needs pacing
    # OpenAI's own example: 5000 a minute, half spent, 30 s to refill: 83 a second.
    lim.release(clock.now, ok=True, limits=RateLimit(requests_limit=5000, requests_remaining=2500, requests_reset=30))
    assert lim.requests is not None and lim.requests.rate == pytest.approx(PACE * 5000 / 60)
    # A bucket of 200 refilled at 200 a second (limit = the bucket's size): the same reading gives 200 a second.
    lim.release(clock.now, ok=True, limits=RateLimit(requests_limit=200, requests_remaining=100, requests_reset=0.5))
    assert lim.requests.rate == pytest.approx(PACE * (5000 / 60 + LEARN_WEIGHT * (200 - 5000 / 60)))
    assert lim.report().paced_rpm == pytest.approx(lim.requests.rate * 60, abs=0.1)


def test_tokens_are_paced_and_the_users_rpm_beats_the_headers() -> None:
    lim, clock = limiter(64, rpm=120)
    lim.in_flight = 2
    spent = RateLimit(requests_limit=6000, requests_remaining=0, requests_reset=6.0, tokens_limit=60_000,
                      tokens_remaining=30_000, tokens_reset=30.0)  # fmt: skip
    lim.release(clock.now, ok=True, limits=spent)
    assert lim.requests is not None and lim.requests.rate == 2.0  # --rpm 120
    assert lim.tokens is not None and lim.tokens.rate == pytest.approx(PACE * 1000)
    assert lim.paused_until == pytest.approx(clock.now + 0.5)  # no request left: wait for one at the user's pace


def test_slots_are_handed_over_in_order_and_cancelled_waiters_give_theirs_back() -> None:
    async def scenario() -> list[str]:
        lim = Limiter(2)
        order: list[str] = []
        await lim.acquire()
        await lim.acquire()
        assert lim.in_flight == 2

        async def wait(name: str) -> None:
            await lim.acquire()
            order.append(name)

        a, b, c = (asyncio.create_task(wait(n)) for n in "abc")
        await asyncio.sleep(0)
        b.cancel()
        await asyncio.sleep(0)
        lim.release(0.0, ok=True)
        await asyncio.sleep(0)
        lim.release(0.0, ok=True)
        await asyncio.gather(a, c)
        assert lim.in_flight == 2 and not lim._waiters
        lim.cancel()
        lim.cancel()
        assert lim.in_flight == 0
        return order

    assert asyncio.run(scenario()) == ["a", "c"]


def test_the_window_bounds_requests_in_flight() -> None:
    async def scenario() -> int:
        lim = Limiter(10)
        lim.window, lim.slow = 3.0, False
        peak = 0

        async def one() -> None:
            nonlocal peak
            sent = await lim.acquire()
            peak = max(peak, lim.in_flight)
            await asyncio.sleep(0.001)
            lim.window = 3.0  # hold the window still: no growth in this test
            lim.release(sent, ok=True)

        await asyncio.gather(*(one() for _ in range(30)))
        return peak

    assert asyncio.run(scenario()) == 3


def test_a_slot_is_freed_and_the_next_request_woken_even_when_the_news_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug of ours in reading an answer (here congestion.py raising) is an error, not a run that hangs: before,
    the slot was counted free but the waiting worker was never woken."""

    def broken(*args: object, **kwargs: object) -> None:
        raise AttributeError("a bug of ours")

    async def scenario() -> tuple[int, list[str]]:
        lim = Limiter(1)
        monkeypatch.setattr(lim.queue, "answered", broken)
        sent = await lim.acquire()
        woken: list[str] = []

        async def second() -> None:
            await lim.acquire()
            woken.append("second")

        task = asyncio.create_task(second())
        await asyncio.sleep(0)
        with pytest.raises(AttributeError, match="a bug of ours"):
            lim.release(sent, ok=True, load=1)
        await asyncio.wait_for(task, 1.0)
        return lim.in_flight, woken

    assert asyncio.run(scenario()) == (1, ["second"])


def answered_while_one_waits(lim: Limiter, clock: Clock, n: int) -> float:
    """`n` requests out and one more waiting for a slot, the first answered a second later: the window then."""

    async def scenario() -> float:
        lim.in_flight, lim.out = 0, 0
        sent = [await lim.acquire() for _ in range(n)]
        waiting = asyncio.ensure_future(lim.acquire())
        await asyncio.sleep(0)
        clock.now += 1
        lim.release(sent[0], ok=True, load=n)
        await asyncio.sleep(0)
        waiting.cancel()
        return lim.window

    return asyncio.run(scenario())


def test_a_try_holds_the_window_exactly_and_a_paid_window_is_grown_to_only_while_requests_wait() -> None:
    """congestion.py's try says the window to hold (`fixed`): the limiter holds exactly that, whatever the answer
    said (no additive growth, no cut by the queue rule), up and down. Once a larger window paid, an answer with fewer
    out grows the window to it at once, but only while requests wait for a slot: a run's last answers, with nothing
    more to send, would otherwise take the window to the knee for nothing (RFC 7661)."""
    lim, clock = limiter(128, timeout=120.0)
    lim.window = 12.0
    for step, window in (("try", 24.0), ("after", 12.0)):
        lim.queue.step = (step, window, lim.queue.answers)
        lim.in_flight, lim.out = 13, 13
        clock.now += 1
        lim.release(clock.now - 0.5, ok=True, load=13)
        assert lim.window == window
    lim.queue.step, lim.queue.paid, lim.queue.held = None, 24.0, True
    lim.queue.floor = 0.5  # the target: 1.5 s; an answer after 0.5 s with 12 out is within it, under the knee
    lim.in_flight, lim.out = 12, 12
    clock.now += 1
    lim.release(clock.now - 0.5, ok=True, load=12)
    assert lim.queue.gaining and lim.window < 13  # nobody waits: one slot a round trip at most

    lim.window = 12.0
    assert answered_while_one_waits(lim, clock, 12) == 24.0


def test_a_429_gives_a_try_up_and_its_cut_stands() -> None:
    lim, clock = limiter(128, timeout=120.0)
    lim.queue.step = ("try", 100.0, 0)
    lim.in_flight = 10
    clock.now += 1
    lim.release(clock.now - 0.1, ok=False, limited=True)
    assert lim.queue.fixed() is None and lim.window == 128 * CUT
    lim.in_flight, lim.out = 10, 10
    clock.now += 1
    lim.release(clock.now - 0.5, ok=True, load=10)
    assert lim.window <= 128 * CUT + 1  # not set back to the try's 100 by the next answer


def test_the_servers_word_on_its_queue_decides_the_window_while_it_is_recent() -> None:
    """vLLM's /metrics (server_queue.py): while the server is busy with nothing waiting, an answer that came late
    with many out is its batch's latency, not a queue's, and holds nothing (the latency rule alone cuts it); where
    requests wait and those running stay flat, the window goes to what runs and as many again, down or up; then late
    answers hold nothing, whatever the next reading; an old word gives the latencies back."""

    def late(lim: Limiter, clock: Clock) -> None:  # a fast answer alone, then one 5 s late with 40 out
        for load, latency in ((1, 0.1), (40, 5.0)):
            lim.in_flight, lim.out = 40, 40
            clock.now += 1
            lim.release(clock.now - latency, ok=True, load=load)

    def told(lim: Limiter, clock: Clock, *readings: tuple[int, int]) -> None:
        for running, waiting in readings:
            lim.server_queue(ServerQueue(running, waiting))
            clock.now += QUEUE_POLL

    alone, clock = limiter(128, timeout=120.0)
    alone.window = 40.0
    late(alone, clock)
    assert alone.window < 40 and alone.queued == 1  # the latency rule: queued

    room, clock = limiter(128, timeout=120.0)
    room.window = 40.0
    told(room, clock, (40, 0), (40, 0))
    late(room, clock)
    assert room.window == 40.0 and room.queued == 0

    full, clock = limiter(128, timeout=120.0)
    told(full, clock, (20, 15), (20, 15))
    full.in_flight, full.out = 35, 35
    full.release(clock.now - 0.1, ok=True, load=35)  # within any target: only the word cuts it
    assert full.window == 20 + math.ceil(QUEUED * 20) == 40 and full.queued == 1
    report = full.report()
    assert report.queue_readings == 2 and report.server_full == 1
    full.window = 3.0  # cut below it meanwhile (a timeout, say): a full reading sets it back up
    full.release(clock.now - 0.1, ok=True, load=20)
    assert full.window == 40
    told(full, clock, (20, 0))  # one reading with nothing waiting: held, whatever the latencies say
    late(full, clock)
    assert full.window == 40 and full.queued == 1

    old, clock = limiter(128, timeout=120.0)
    old.window = 40.0
    told(old, clock, (40, 0), (40, 0))
    clock.now += STALE  # `late` moves the clock on by two seconds more: the word is older than STALE
    late(old, clock)
    assert old.window < 40 and old.queued == 1


def test_room_at_the_server_grows_the_window_within_the_timeouts_share_while_requests_wait() -> None:
    lim, clock = limiter(128, timeout=120.0)
    lim.window = 10.0
    lim.server_queue(ServerQueue(10, 0))
    lim.server_queue(ServerQueue(10, 0))

    # One answer a second since the first request left (the pace congestion.py `safe` takes before more come): 30
    # within a quarter of --timeout's 120 s, at once
    assert answered_while_one_waits(lim, clock, 10) == 30.0
    lim.window = 10.0
    lim.in_flight, lim.out = 10, 10
    lim.release(clock.now - 1.0, ok=True, load=10)
    assert lim.window == 10.0  # nobody waits: no growth (RFC 7661)


def test_a_full_servers_queue_stays_within_the_timeouts_share_but_its_capacity_is_kept() -> None:
    """The queue kept at a full server (as many again as it runs) is only what its pace answers within a quarter of
    --timeout; what it computes at once is kept whatever the pace (those never wait)."""
    lim, clock = limiter(128, timeout=20.0)
    for _ in range(2):
        lim.server_queue(ServerQueue(40, 30))
        clock.now += QUEUE_POLL
    lim.in_flight, lim.out = 70, 70
    lim.release(clock.now - 4.0, ok=True, load=40)  # one answer in 4 s so far: 1.25 within 5 s
    assert lim.queue.safe() < 40 and lim.window == 40
    fast, clock = limiter(128, timeout=20.0)
    for _ in range(2):
        fast.server_queue(ServerQueue(40, 30))
        clock.now += QUEUE_POLL
    for _ in range(50):  # fifty answers in 0.5 s: the pace answers far more than 80 within 5 s
        fast.in_flight, fast.out = 70, 70
        clock.now += 0.01
        fast.release(clock.now - 0.01, ok=True, load=40)
    assert fast.queue.safe() > 80 and fast.window == 80
