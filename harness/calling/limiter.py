"""How many API requests may be in flight, and when the next one may start.

`--concurrency` is a ceiling, not a setting to tune: the window of requests in flight starts small
(INITIAL_WINDOW) and, from the first answer, as many as the server's pace answers well within --timeout (slow
start; against an API, the ceiling at once), is cut
multiplicatively when the provider answers 429 or an attempt times out, and grows back additively while it keeps
up (AIMD, as TCP does), so a run settles just under a rate limit it was never told about. Against a server that
queues (a local one: llama.cpp, vLLM, Ollama), answers whose latency grows with the load hold the window to what
the server serves at once (harness/calling/congestion.py), or the server says so itself (`serves`: llama.cpp's
/props; `server_queue`: vLLM's /metrics, harness/calling/server_queue.py), so that no request waits long enough to
time out (issue 42); against one that batches all it holds and says nothing (vLLM with /metrics hidden),
a window twice the hold is tried now and then (held exactly where congestion.py `fixed` says, until its answers a
second are read) and kept where it brings more answers a second, within a quarter of --timeout. A cut happens at
most once per round trip, and only for a 429 to a request sent after the last cut: a burst of 429s to requests that
were already out is one piece of news, not many. A 429's retry-after pauses new requests for that long (the
request itself waits it out in dispatch's retry policy, holding no slot).

Where the provider's headers show its limits draining (x-ratelimit-{limit,remaining,reset}-{requests,tokens},
Anthropic's anthropic-ratelimit-*; harness/calling/limits.py), or the user states them (--rpm / --tpm), requests
are also paced to just under that rate by a GCRA token bucket (`Pacer`), prompt tokens counted as dispatch
counts them for --max-cost, so 429s become rare instead of being the signal.

A 429 also teaches a rate where no header does (or theirs was too high): the request rate is cut to PROBE_CUT of
what was sent (or to the share answered, if less) and probed back along CUBIC's curve (RFC 8312), paced by a
second bucket (`probe`). A halved window swings between half the limit and all of it (75 % on average); a rate cut
by a tenth stays within a tenth. Until the first answer, requests leave at most START_RATE a second (where the
first window is larger than INITIAL_WINDOW: a server's stated slots): against a burst allowance of 10-20, 429s to a
first wave sent all at once would outnumber all later ones.

Paced requests pass a turnstile one at a time, in order, and each is booked against the buckets at the moment it
actually leaves, not when it joined the queue: times booked in advance would all come due together after any
stall of this process (a busy machine, a long garbage collection), and that bunch, not the average rate, is what a
provider's bucket refuses. Booking late, a stall costs the time lost and nothing more.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from harness.calling.congestion import QueueWatch
from harness.calling.limits import Pacer, refill_rate
from harness.calling.server_queue import SaidQueue
from harness.types import RateLimit, ServerQueue

CUT = 0.5  # the window after a 429, as a share of what it was
GROW_PERIOD = 0.1  # seconds: the window grows back by at most one slot in this time
PACE = 0.98  # share of a provider-reported limit we pace to: headroom for clocks (other clients: the 429s' probe)
RETRY_AFTER_CAP = 60.0  # seconds: the longest pause a retry-after may impose on the whole run
# seconds: the longest reset a header is read as. Their limits are per minute, so a bucket is whole within 60 s; a
# reset of 10^9 s or in the year 9999 would pace a run to a request an age (issue 30).
RESET_CAP = RETRY_AFTER_CAP
FIRST_RTT = 0.1  # seconds assumed for a round trip until one is measured
LEARN_WEIGHT = 0.2  # each new reading moves the paced rate this far towards it
# Paced evenly, but a bucket of two lets a request whose timer fired late be followed by the next on time, so
# timer lateness does not add up to a slower pace; after a stall at most two leave at once.
REQUEST_BURST = 2.0
START_RATE, START_BURST = 1000.0, 16.0  # requests a second (after a burst of 16) until the first answer
PROBE_CUT = 0.9  # the request rate after a 429, as a share of what it was (CUBIC's beta, RFC 8312: 0.7 for windows)
PROBE_K = 1.0  # seconds the probe takes to climb back to the rate that met the 429 (CUBIC's K)
# The first window (TCP's initial window is 10): a first wave of 128 to a server that serves one at a time would
# wait 128 service times, past any --timeout. The first answer tells the pace, and slow start grows to what it
# answers within a quarter of --timeout (against an API: the ceiling, at once).
INITIAL_WINDOW = 8
QUEUED_SHARE = 0.25  # beyond the slots a server states, this share more in flight: a freed slot is refilled at once


@dataclass(frozen=True)
class LimiterReport:
    """What the limiter did, for metrics.json ("dispatch" -> "limiter")."""

    ceiling: int
    final_window: float
    lowest_window: float
    rate_limited: int  # 429 replies seen
    paced_rpm: float | None  # the request rate paced to (--rpm, or learned from headers); None: not paced
    paced_tpm: float | None
    probed_rpm: float | None = None  # the request rate 429s taught (probed back up since); None: no 429
    timed_out: int = 0  # attempts abandoned at --timeout (each cuts the window as a 429 does)
    queued: int = 0  # answers that queued at the server and held the window to its pace (congestion.py)
    server_slots: int | None = None  # what the server said it serves at once (llama.cpp's /props); None: not said
    queue_readings: int = 0  # readings of the server's queue (vLLM's /metrics: server_queue.py); 0: it states none
    server_full: int = 0  # readings that showed it full (requests waiting, those running not climbing)


class Limiter:
    def __init__(
        self,
        ceiling: int,
        rpm: float | None = None,
        tpm: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        timeout: float | None = None,  # --timeout: answers should come well within it (congestion.py)
    ) -> None:
        self.ceiling = max(1, ceiling)
        self.window, self.lowest = float(min(self.ceiling, INITIAL_WINDOW)), float(self.ceiling)
        self.slow = self.window < self.ceiling  # slow start: one more per answer until the ceiling or congestion
        self.queue = QueueWatch(timeout, self.ceiling)
        self.timed_out = self.queued = self.answers = 0  # answers: all the answers seen
        self.server_slots: int | None = None
        self.said = SaidQueue()  # the server's own word on its queue, where it gives one (vLLM's /metrics)
        self.in_flight = 0  # slots taken: requests out, and those handed a slot that wait at the turnstile
        # Requests out (past the turnstile, not back), counted one by one as each leaves: a request's `load`, its
        # place in the order sent (congestion.py). Not `in_flight`: `_wake` hands out a wave's slots all at once,
        # so every request of a wave would read the whole wave as ahead of it.
        self.out = 0
        self.clock = clock
        self.fixed_rpm, self.fixed_tpm = rpm is not None, tpm is not None  # the user's word beats the headers
        self.requests = Pacer(rpm / 60.0, REQUEST_BURST) if rpm else None
        self.tokens = Pacer(tpm / 60.0, tpm / 60.0, tpm) if tpm else None  # a second's worth goes at once
        self.start: Pacer | None = Pacer(START_RATE, START_BURST)  # until the first answer
        self.probe: Pacer | None = None  # the rate 429s taught, when they have
        self.probe_max, self.probe_cut = 0.0, -math.inf  # the rate that met the last 429, and when
        self.refused = self.answered = 0  # 429s and answers since that cut
        self.beta = PROBE_CUT  # the last cut's share: the probe's curve starts there and is back at probe_max in K
        self.paused_until = self.last_cut = -math.inf
        self.rtt = FIRST_RTT
        self.rate_limited = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._gate: deque[tuple[asyncio.Future[float], float]] = deque()  # (waiter, cost): the turnstile's queue
        self._gate_timer: asyncio.TimerHandle | None = None  # armed whenever the queue is not empty

    def _cap(self) -> int:
        if self.probe is None:
            return max(1, int(self.window))
        # Paced by the probe, the window must not be what binds: twice what the paced rate keeps in flight.
        return max(1, int(self.window), min(self.ceiling, math.ceil(2 * self.probe.rate * self.rtt)))

    async def acquire(self, cost: float = 0.0) -> float:
        """Wait for a slot, any pause and the pacers; returns when it left. One `release` (or `cancel`) each."""
        if self._waiters or self.in_flight >= self._cap():
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter  # `_wake` counts the slot for us before it wakes us
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    self.cancel()  # handed a slot while being cancelled: give it back
                else:
                    self._waiters.remove(waiter)
                raise
        else:
            self.in_flight += 1
        try:
            sent = await self._turnstile(cost)
        except asyncio.CancelledError:
            self.cancel()
            raise
        self.out += 1
        return sent

    def _free_at(self, cost: float) -> float:
        """The earliest time the next request (of `cost` prompt tokens) may leave: pause and buckets."""
        start = self.paused_until
        for pacer in (self.requests, self.start, self.probe):  # a request a unit
            if pacer is not None:
                start = max(start, pacer.free_at(1.0))
        if self.tokens is not None and cost > 0:
            start = max(start, self.tokens.free_at(cost))
        return start

    def _book(self, cost: float, now: float) -> float:
        for pacer in (self.requests, self.start, self.probe):
            if pacer is not None:
                pacer.book(1.0, now)
        if self.tokens is not None and cost > 0:
            self.tokens.book(cost, now)
        return now

    async def _turnstile(self, cost: float) -> float:
        """Pass now if nobody queues and the buckets allow it; else queue, in order, for `_open`."""
        now = self.clock()
        if not self._gate and self._free_at(cost) <= now:
            return self._book(cost, now)  # the common case, unpaced or under the limit: no timer, no future
        waiter: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self._gate.append((waiter, cost))
        if self._gate_timer is None:
            self._open()
        return await waiter  # a cancelled waiter stays queued and is skipped by `_open`

    def _open(self) -> None:
        """Let out every queued request the buckets allow now, booking each as it leaves; then wait for the next."""
        self._gate_timer = None
        now = self.clock()
        while self._gate:
            waiter, cost = self._gate[0]
            if waiter.done():  # cancelled while queued
                self._gate.popleft()
                continue
            start = self._free_at(cost)
            if start > now:  # re-read when the timer fires: a 429's pause or a new rate may have moved it
                self._gate_timer = asyncio.get_running_loop().call_later(start - now, self._open)
                return
            self._gate.popleft()
            waiter.set_result(self._book(cost, now))

    def serves(self, slots: int) -> None:
        """The server says it serves `slots` requests at once (llama.cpp's /props `total_slots`): that and a
        quarter more in flight, from the first request (no slow start needed: the capacity is known)."""
        self.server_slots = slots
        self.ceiling = max(1, min(self.ceiling, slots + math.ceil(QUEUED_SHARE * slots)))
        self.queue.ceiling = self.ceiling
        self.window, self.slow = float(self.ceiling), False
        self.lowest = min(self.lowest, self.window)

    def server_queue(self, queue: ServerQueue) -> None:
        """The server says how many requests it computes now and how many wait (vLLM's /metrics, read every
        QUEUE_POLL seconds while requests are out): while that is recent, it decides the window, not the latencies."""
        self.said.said(queue, self.clock())

    def _congested(self, window: float) -> None:
        """Congestion (a 429, a timeout, a queue): the window down to `window`, slow start over."""
        self.window = max(1.0, min(self.window, window))
        self.lowest = min(self.lowest, self.window)
        self.slow = False

    def paced(self) -> bool:  # whether requests leave at a pace (the user's, the headers' or the 429s')
        return self.requests is not None or self.probe is not None

    def cancel(self) -> None:  # a slot given back unused
        self.in_flight -= 1
        self._wake()

    def release(
        self, sent: float, *, ok: bool, limited: bool = False, retry_after: float | None = None,
        limits: RateLimit | None = None, timed_out: bool = False, load: int = 0,
    ) -> None:  # fmt: skip
        """The request that left at `sent`, with `load` requests in flight (itself included; 0: unknown), came
        back: answered (`ok`), answered 429 (`limited`), abandoned at --timeout (`timed_out`: congestion, as a
        429 is), or none of these (a server error: no news about the rate limit, so the window stays). The slot is
        freed and the next request woken whatever the news does: a bug of ours that raised in between (say in
        congestion.py) would otherwise leave every worker waiting for a slot, and the run would hang unfinished."""
        now = self.clock()
        self.out -= 1
        later = False
        try:
            later = self._news(now, sent, ok, limited, retry_after, limits, timed_out, load)
        finally:
            if not later:
                self.in_flight -= 1
                self._wake()

    def _news(
        self, now: float, sent: float, ok: bool, limited: bool, retry_after: float | None, limits: RateLimit | None,
        timed_out: bool, load: int,
    ) -> bool:  # fmt: skip
        """What a reply says of the window and the pace (`release`); True where the slot is freed later (a 429's)."""
        if limits is not None:
            # Headers no rule foresaw are no news; either way the slot below is freed (a leaked one hangs a run).
            with contextlib.suppress(ArithmeticError, ValueError, TypeError):
                self._learn(limits, now)
        self.answers += ok
        if limited or self.answers >= self.ceiling:  # a 429, or a window's worth of answers: the first
            self.start = None  # wave is over (slow start's jump to the ceiling at the first answer is in it)
        if limited:
            self.rate_limited += 1
            self.refused += 1
            self.queue.interrupt()
            if not self.fixed_rpm and sent > self.probe_cut:  # news: sent after the last cut
                self._cut_probe(now)
            if sent >= self.last_cut and now - self.last_cut >= self.rtt:
                self._congested(self.window * CUT)
                self.last_cut = now
            if retry_after is not None:
                self.paused_until = max(self.paused_until, now + min(retry_after, RETRY_AFTER_CAP))
            # A 429 comes back at once, an answer after a round trip: a slot freed by a 429 straight away would
            # go round dozens of times per answered one, each time refused. So it stays taken for a round trip.
            hold = self.rtt - (now - sent)
            if hold > 0:
                with contextlib.suppress(RuntimeError):  # no event loop (a caller outside dispatch): free it now
                    asyncio.get_running_loop().call_later(hold, self.cancel)
                    return True
            return False
        if timed_out:
            self.timed_out += 1
            # Cut once per round trip, as for 429s, and at least to what the server's pace answers in time.
            held = self.queue.timed_out(load, now - sent)
            if sent >= self.last_cut and now - self.last_cut >= self.rtt:
                self._congested(min(self.window * CUT, held if held is not None else math.inf))
                self.last_cut = now
        if ok:
            self.rtt += 0.125 * ((now - sent) - self.rtt)  # smoothed as TCP smooths its RTT
            self.answered += 1
            if self.probe is not None:
                self._grow_probe(self.probe, now)
            held = self.queue.answered(load, now - sent, now, self.out + 1) if load else None
            fixed, word = self.queue.fixed(), self.said.word(now)
            if word is not None:  # the server's own word on its queue (server_queue.py), not what latencies suggest
                if word.kind == "full" and self.said.capacity is not None:  # to what it computes and its queue
                    queue = max(float(self.said.capacity), min(word.most, self.queue.safe()))  # within the share
                    self.queued += queue < self.window
                    self.window, self.slow = max(1.0, min(float(self.ceiling), queue)), False
                    self.lowest = min(self.lowest, self.window)
                elif word.kind == "room" and self._waiters:  # nothing waits there: grow, within the timeout's share
                    top = min(float(self.ceiling), self.queue.safe(), word.most)
                    self.window, self.slow = max(self.window, top), False
            elif fixed is not None:  # a try (congestion.py): the window held where its rate is read, nothing else
                self.window, self.slow = max(1.0, min(float(self.ceiling), fixed)), False
                self.lowest = min(self.lowest, self.window)
            elif held is not None and held < self.window:  # this answer queued: in flight to the server's pace
                self.queued += 1
                self._congested(held)
            elif self.window < self.ceiling:
                # Never past what the server's pace answers well within --timeout (congestion.py `safe`): a first
                # wave grown past that would time out before the queue rule could act. Slow start goes straight
                # there (against an API, to the ceiling at the first answer); after it, one more slot per round
                # trip, no faster than one per GROW_PERIOD (a fast server: no overshoots).
                top = min(float(self.ceiling), max(self.window, self.queue.safe()))
                step = min(1.0, self.rtt / GROW_PERIOD) / self.window
                # Towards a window that paid or is tried (congestion.py `knee`: a batching server): there at once, as
                # slow start goes to `top`; only while requests wait for a slot: a run's last answers, with nothing
                # more to send, would grow it for nothing (RFC 7661: not while application-limited).
                if self.queue.gaining and self._waiters:
                    step = max(step, self.queue.knee() - self.window)
                self.window = top if self.slow else min(top, self.window + step)
                self.slow = self.slow and self.window < self.ceiling
        return False

    def _cut_probe(self, now: float) -> None:
        """A 429 to a request sent since the last cut: the rate is cut to PROBE_CUT of what was being sent (the
        pace of the probe or of the headers, else what the window kept out in a round trip), or further, to the share
        of attempts answered since the last cut (at most by half): far above the limit, that share is the limit."""
        sending = self.probe.rate if self.probe is not None else max(1.0, self.in_flight) / self.rtt
        if self.requests is not None:
            sending = min(sending, self.requests.rate)
        seen = self.answered + self.refused
        share = self.answered / seen if seen >= 4 else 1.0  # of what was sent, what the limit let through
        rate = max(CUT, min(PROBE_CUT, share)) * sending
        self.beta = rate / sending
        self.probe_max, self.probe_cut, self.refused, self.answered = sending, now, 0, 0
        if self.probe is None:
            self.probe = Pacer(rate, REQUEST_BURST)
        else:
            self.probe.rate = rate

    def _grow_probe(self, probe: Pacer, now: float) -> None:
        """CUBIC's curve: back to the rate that met the last 429 in PROBE_K seconds, faster and faster beyond it; the
        probe is dropped at 8 times that rate, 3-5 K seconds without a 429 (the limit has gone: the window is back)."""
        t = (now - self.probe_cut) / PROBE_K - 1.0
        probe.rate = self.probe_max * (1.0 + (1.0 - self.beta) * t * t * t)
        if probe.rate > 8.0 * self.probe_max:
            self.probe = None

    def _learn(self, limits: RateLimit, now: float) -> None:
        """Pace to just under the refill rate the provider's headers reveal (limits.py `refill_rate`); wait when a
        limit is spent."""
        for kind, limit, remaining, reset in (
            ("requests", limits.requests_limit, limits.requests_remaining, limits.requests_reset),
            ("tokens", limits.tokens_limit, limits.tokens_remaining, limits.tokens_reset),
        ):
            fixed = self.fixed_rpm if kind == "requests" else self.fixed_tpm  # the user's word beats the headers
            if not limit or remaining is None:
                continue
            pacer = self.requests if kind == "requests" else self.tokens
            if reset is not None and not math.isfinite(reset):
                continue  # limits.py reads none of these; a RateLimit made elsewhere might hold one
            refill = None if fixed or not reset else refill_rate(limit, remaining, min(reset, RESET_CAP))
            if refill is not None:
                rate = PACE * refill
                if pacer is None:  # requests: evenly spaced; tokens: a second's worth may go at once
                    pacer = Pacer(rate, REQUEST_BURST if kind == "requests" else rate)
                    if kind == "requests":
                        self.requests = pacer
                    else:
                        self.tokens = pacer
                else:
                    pacer.rate += LEARN_WEIGHT * (rate - pacer.rate)
                    pacer.burst = REQUEST_BURST if kind == "requests" else pacer.rate
                pacer.limit = limit  # a token limit under one prompt stops the run (attempts.py, limits.py unfit)
            if remaining < 1 and pacer is not None and pacer.rate > 0:  # until one more unit is back, capped as
                self.paused_until = max(self.paused_until, now + min(1.0 / pacer.rate, RETRY_AFTER_CAP))  # retry-after

    def _wake(self) -> None:
        while self._waiters and self.in_flight < self._cap():
            waiter = self._waiters.popleft()
            if not waiter.done():
                self.in_flight += 1
                waiter.set_result(None)

    def report(self) -> LimiterReport:
        return LimiterReport(
            self.ceiling,
            round(self.window, 2),
            round(self.lowest, 2),
            self.rate_limited,
            round(self.requests.rate * 60.0, 1) if self.requests else None,
            round(self.tokens.rate * 60.0, 1) if self.tokens else None,
            round(self.probe.rate * 60.0, 1) if self.probe else None,
            self.timed_out,
            self.queued,
            self.server_slots,
            self.said.readings,
            self.said.full,
        )
