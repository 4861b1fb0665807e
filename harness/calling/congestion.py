"""When a server queues requests: how many to keep in flight so that none waits long enough to time out (issue 42).

A local server (llama.cpp's, Ollama, LM Studio, `vllm serve`, `transformers serve`) computes a few requests at once
and queues the rest: sent 128 at once, the last of them wait 128 service times, pass --timeout, are abandoned and sent
again, while llama.cpp computes a request it has started to the end for nobody. No 429 ever says so. What does is
the latency: while a server works through requests slower than they are sent, each answer's latency grows with the
number in flight and the answers a second do not. By Little's law (L = lambda W) a request sent with `load` requests
of ours out (itself included, counted in the order they left: a wave's last saw the whole wave ahead of it, its
first none of it; limiter.py `out`) and answered `latency` later saw the server answer load / latency requests a
second, whether it queued (a queueing server: the latency is the load over that rate) or not (an API: the latency
is its own, and the rate is just our load over it). `QueueWatch` keeps that rate smoothed and the fastest answer
seen (the latency of a request that did not queue) and, when an answer took longer than a few of those (QUEUE_K,
and never longer than a share of --timeout), says how many in flight keep answers within that: rate x target.
Against an API that does not queue, the rate x target is above what is in flight whenever the typical latency is
within the target, so jitter (one slow answer) never holds the window: only latency that follows the load does.

This is TCP Vegas's and Netflix's concurrency-limits "gradient" idea (in flight = rate x no-load round trip x a
tolerance) with the rate read per answer from Little's law. A timed-out attempt is the same news, late: its latency
was at least --timeout. Where the server states how many it serves at once (llama.cpp's GET /props `total_slots`,
its `--parallel`), the limiter starts from that instead (limiter.py `serves`); where it states its queue (vLLM's
GET /metrics), its word decides while it is recent (server_queue.py), and this watch only where it says nothing.

Latency that grows with the window is congestion only while the answers a second do NOT grow with it. A server that
batches all it holds (vLLM's continuous batching) answers more a second the more it holds, each answer later: held
where answers take QUEUE_K fastest ones, it gives well under what a larger window brings. So, once a server has
queued and answers late at its hold, `QueueWatch` now and then tries a window twice as large, as an experiment
(BBR's ProbeBW, `step`): the limiter holds the window exactly at the hold until its answers a second are read
("before"), at twice it ("try"), and at the hold again ("after"). The try is kept (`knee`) where it brought GAIN
more answers a second than the hold both before and after it, and the next try, twice as large again, begins from
it; else it is given up, and the next waits twice as long as the last. A server whose rate is flat past its slots
(llama.cpp's, our fake server) never pays past them: it is held as before, at twice the hold for a try's rounds
now and then, its answers within twice the target meanwhile. An API that does not queue never reaches this (no
answer is late), and 429s are limiter.py's. Every window stays within what the pace answers within TIMEOUT_SHARE of
--timeout.

Until 2026-11-30 the sizes were compared as the window passed through them, and that read a flat server as paying.
A first wave's drain passes through many sizes while nothing is sent; their rates are the wave's (which requests
the server took first, a speed that drifts while the window falls), not a size's: a four-slot llama.cpp server read
as paying in all six traced drains, and the window went to 40-57 in flight where 4 slots serve (its fixed levels
5, 16, 32 and 48 gave the same answers a second within 3 %). So a rate is read only from steady rounds (every
answer of the round came with about as many in flight: within STEADY), a try holds its windows exactly, and the
hold is read again after the try (A-B-A), so that a speed that drifts under a run, or that changes with the
window's direction, moves both sides of the comparison alike. And the answers are counted by instant: answers that
come together (a batch finished in one step; vLLM's server returns some 26 at once, within a millisecond or two)
are counted all or none; a round that began or ended inside one read hundreds of answers a second from a server
that gave 17, and that, not the server, had found vLLM's knee.
"""

from __future__ import annotations

import math
from collections import deque

QUEUE_K = 3.0  # an answer may take this many times the fastest one before the window is held: one's own service
# time and about two more in the queue, so that a slot freed is refilled at once (the server never idles)
TIMEOUT_SHARE = 0.25  # and never longer than this share of --timeout: a quarter, so that a slower stretch of the
# server (a long prompt, another client) still leaves room before the timeout
RECENT = 256  # the rate is read from the last this many answers: two windows of --concurrency's 128, so that a
# run's last answers (the slow ones: the fast came back earlier) never make up all of them
TOP_SHARE = 0.1  # the rate is the reading this share of them beat: near their best (BBR's windowed maximum), but
# not a single reading, which answers that reached the server in another order than they left (a first wave) inflate
REREAD = 16  # answers between two readings of the rate (a sort of RECENT numbers: not on every answer)
GAIN = 0.05  # a window twice as large is worth its latency where it brings at least this share more answers a second:
# with latency a + b x load (a batching server), doubling gains a / (a + b load), so growing until the gain falls
# under 5 % stops at 95 % of the most the server can give, whatever a and b are
STEPS = 4  # sizes of window told apart per doubling (a quarter of an octave: 16, 19, 23, 27, 32 ...)
SPAN = 256  # instants kept for each size (a bound on memory: a try's step reads only its own)
ENOUGH = 2  # rounds' answers a size's steady instants need before its rate is read: a round's are a first wave's
# order or a burst's luck; each answer is counted once (rounds overlap, instants do not)
FRESH = 3  # a try given up makes the next wait at least this many of its rounds (and twice as long as the last)
FEW = 8  # answers a round holds at least: one or two are a first wave's order, not a pace
STEADY = 2**0.5  # a round is steady where the most in flight as its answers came is within this factor of the least
# (half an octave: a held window moves by a slot or two; slow start doubles in a round, a drain halves)
SAME = 16  # answers within this share of the fastest answer's latency after an instant's first are of that instant
# (a batch finished in one step comes within a few milliseconds; a server's next answers, a step or more later)
TRY_ROUNDS = 4  # a try is given up (as not paying) where its size has no rate after this many of its rounds


class QueueWatch:
    """The server's pace as our answers show it, and how many in flight keep latency within the target."""

    def __init__(self, timeout: float | None = None, ceiling: float = math.inf) -> None:
        self.timeout = timeout if timeout is not None and timeout > 0 else math.inf
        self.ceiling = ceiling  # --concurrency: no window is tried past it
        self.floor = math.inf  # the fastest answer's latency: a request that did not queue
        self.readings: deque[float] = deque(maxlen=RECENT)  # load / latency of the last answers
        self._rate: float | None = None
        self._since = self.answers = 0  # answers since the rate was read; in all
        self.first_sent, self.last_answer = math.inf, -math.inf  # the delivery rate since the first request
        # The answers a second delivered at each size of window, which the rate (the best lately, at whatever
        # window) cannot tell apart: the last answers (when each came, how many were out, and its instant), and by
        # size (STEPS per doubling), each instant of a steady round with that many out: its answers and their time.
        self.came: deque[tuple[float, int, int]] = deque(maxlen=RECENT)
        self.instant, self.instant_at = 0, -math.inf  # the instant's number and when its first answer came
        self.by_size: dict[int, deque[tuple[int, int, float]]] = {}  # (answers then, its answers, their time)
        self.paid = 1.0  # the largest window that paid (the knee): a try that brought GAIN more than the hold
        # A try (BBR's ProbeBW, as an experiment): the window held at the hold ("before"), at twice it ("try"), and at
        # the hold again ("after"), each until its rate is read; (step, window, answers when the step began).
        self.step: tuple[str, float, int] | None = None
        self.before = self.here = 0.0  # the rates read at the hold and at the window tried
        self.hold = self.tried = 1.0  # the windows of the try's steps: the hold's, the larger one's
        self.next_try = self.wait = 0  # answers before which no try begins; how many a try given up adds (doubling)
        self.gaining = False  # the last answer queued, but a larger window paid (grow towards it)
        self.held = False  # an answer queued (a hold was said): a server that queues, not an API

    @property
    def rate(self) -> float | None:
        """Answers a second the server gave at best lately (Little's law, read per answer); None before any."""
        if not self.readings:
            return None
        if self._rate is None or self._since >= REREAD or len(self.readings) <= REREAD:
            ranked = sorted(self.readings)
            self._rate, self._since = ranked[int((1.0 - TOP_SHARE) * (len(ranked) - 1))], 0
        return self._rate

    def target(self) -> float:
        """The longest latency that is not queueing: QUEUE_K fastest answers, at most TIMEOUT_SHARE of --timeout."""
        return min(QUEUE_K * self.floor, TIMEOUT_SHARE * self.timeout)

    def knee(self) -> float:
        """The most in flight that paid: the largest window a try kept (1: none)."""
        return self.paid

    def fixed(self) -> float | None:
        """The window to hold exactly while a try reads a rate (limiter.py); None: no try under way."""
        return None if self.step is None else self.step[1]

    def answered(self, load: int, latency: float, now: float = 0.0, out: int | None = None) -> float | None:
        """An answer `latency` seconds after it left with `load` requests in flight (`out` as it came, itself
        included; `load` if not given): the most in flight that keeps
        answers within the target, when this one took longer (it queued); None when it did not, when a try holds
        the window (`fixed`), or when a larger window paid (`gaining`: a server that batches what it holds).

        The rate is near the best reading of the last RECENT answers, not their average: against a server that
        queues, every reading is its pace (load / latency is the same for the first and the last in the queue);
        against one that does not, a slow answer's reading is low and a fast one's high, and the best of them puts
        the limit at about QUEUE_K times our load: jitter never holds the window, only latency that follows the load.
        """
        self.gaining = False
        if latency <= 0 or load < 1:
            return None
        self.floor = min(self.floor, latency)
        self.readings.append(load / latency)
        out = load if out is None else max(1, out)
        self._delivered(now, out)
        self._since += 1
        self.answers += 1
        self.first_sent, self.last_answer = min(self.first_sent, now - latency), max(self.last_answer, now)
        rate, target, limit = self.rate or 0.0, self.target(), TIMEOUT_SHARE * self.timeout
        if self.step is not None:
            self._judge(rate * limit)
            return None
        knee = self.knee()
        if latency <= target:
            # Within the target, but where a larger window paid (a batching server, once it has queued), grow to it
            # at once, as slow start does: the queue rule would hold it short of it.
            self.gaining = self.held and knee > out
            return None
        # Latency grows with the window; that is congestion only where answers a second do not grow with it too
        # (a batching server, vLLM, answers more a second the more it holds, each answer later). Towards a window
        # that paid, it grows as slow start does: within TIMEOUT_SHARE of --timeout, never past it.
        if latency <= limit and knee > out:
            self.gaining = True
            return None
        # Queued: later than the target. A server that has queued before, answering late at its hold (not in a
        # drain from far above it), is tried at twice that now and then (`_begin`). Otherwise held, where more are in
        # flight than the pace answers within the target (this second test also keeps slow start growing: its
        # answers left with a smaller window in flight than now), to that, or to the window that paid, never more
        # than the pace answers within the timeout's share.
        hold = max(rate * target, min(knee, rate * limit))
        if self.held and out <= STEADY * hold and self._begin(out, hold, rate * limit):
            return None
        if hold >= load:
            return None
        self.held = True
        return max(1.0, hold)

    def _begin(self, out: int, hold: float, most: float) -> bool:
        """Whether a try begins now: none given up lately, a larger window to try (`_larger`: by half an octave at
        least), and the window steady at `out` lately (its rate read: not a drain from a first wave). Its first step
        holds the window at the hold (or `out`, if less) exactly, to read its rate on its own rounds: the window
        tried is twice that, and its answers take no more than twice the target. (The rate read while the window
        moved is no "before": as one, it let four-slot virtual servers keep tries in 1-2 runs of 20.)"""
        window = max(1.0, round(min(out, hold)))
        if self.answers < self.next_try or self._larger(window, most) < STEADY * window:
            return False
        if self.pace(out, self.answers - FRESH * max(FEW, out)) is None:  # not steady there lately: a drain
            return False
        self.step = ("before", window, self.answers)
        return True

    def _larger(self, hold: float, most: float) -> float:
        """The window a try holds after `hold`: twice it, within --concurrency and the timeout's share (`most`)."""
        return min(2.0 * hold, most, self.ceiling)

    def _judge(self, most: float) -> None:
        """A try's next step, once the window it holds has a rate from its own steady rounds. Before: the hold's rate
        is read, and the window goes to twice it (`_larger`). Try: given up where it brought less than GAIN more
        answers a second a doubling than the hold just before it; else the window goes back to the hold. After: the
        try is kept (the knee) where it also brought GAIN more than the hold after it (A-B-A: a speed that drifts
        under a run, or that changes with the window's direction, moves the hold before and after alike, and a try
        between them no longer reads as paying), and the next begins from it at once. A step whose window has no
        rate after TRY_ROUNDS of its rounds (the window never got there: nothing more to send) gives the try up;
        given up, the next waits twice as long as the last did."""
        assert self.step is not None
        kind, window, began = self.step
        read = self.pace(window, began)
        if read is None:
            if self.answers - began >= TRY_ROUNDS * max(FEW, window):
                self._give_up(window)
            return
        if kind == "before":
            self.before, self.hold = read, window
            self.step = ("try", self._larger(window, most), self.answers)
        elif kind == "try" and self._more(read, self.before, window / self.hold):
            self.here, self.step = read, ("after", self.hold, self.answers)
        elif kind == "after" and self._more(self.here, read, self.tried / self.hold):
            # Kept: the next try begins at once from it, its rate (read a step ago) as the hold's before
            self.paid, self.next_try, self.step = self.tried, self.answers, None
            larger = self._larger(self.tried, most)
            if larger >= STEADY * self.tried:
                self.before, self.hold = self.here, self.tried
                self.step = ("try", larger, self.answers)
        else:
            self._give_up(window)
        if self.step is not None and self.step[0] == "try":
            self.tried = self.step[1]

    def interrupt(self) -> None:
        """A timeout or a 429 cuts the window (limiter.py): a try under way is given up, not held against the cut."""
        if self.step is not None:
            self._give_up(self.step[1])

    def _give_up(self, window: float) -> None:
        self.step = None
        self.wait = max(2 * self.wait, FRESH * max(FEW, round(window)))
        self.next_try = self.answers + self.wait

    def _delivered(self, now: float, out: int) -> None:
        """The answers delivered since the last instant and over what time, by the number in flight as they came,
        where that stayed steady (within STEADY) over the round that ended there (as many answers as were out, at
        least FEW). Counted as they arrive, not per request: which request the server took first (a first wave
        reaches it in no order we know) changes no count, and a batch answered at once is spread over its round
        (BBR's delivery rate: delivered over a round trip, with what was in flight meanwhile). Counted by instant:
        answers that came together (within SAME of the fastest latency) are counted all or none."""
        came = self.came
        if now - self.instant_at > self.floor / SAME:  # a new instant: the last one is whole
            if len(came) > FEW:
                last = list(came)
                # In flight as each instant began (its first answer's count): a batch of 26 answered within a
                # millisecond or two takes that many out before the next requests leave, and is of that window.
                began: dict[int, int] = {}
                for _, n, i in last:
                    began.setdefault(i, n)
                end, instant = last[-1][0], last[-1][2]
                first = last[-1 - min(len(last) - 1, max(FEW, began[instant]))][2]
                # The round: the instants from the one a round's answers back (whose end starts the time counted,
                # where the round has one instant only) to the last, which ended now.
                whole = [began[i] for _, _, i in last if i >= first]
                ended = [t for t, _, i in last if i < instant]  # the instant before the last: its end
                if ended and len(whole) >= FEW and max(whole) <= STEADY * min(whole):
                    size = round(STEPS * math.log2(sum(whole) / len(whole)))
                    mine = sum(1 for _, _, i in last if i == instant)
                    self.by_size.setdefault(size, deque(maxlen=SPAN)).append((self.answers, mine, end - ended[-1]))
            self.instant, self.instant_at = self.instant + 1, now
        came.append((now, out, self.instant))

    def pace(self, out: float, since: int = -1) -> float | None:
        """Answers a second delivered with about `out` in flight (its size and the two beside it: within a fifth),
        over the instants of its steady rounds (ended after `since` answers): all their answers over all their time,
        once they hold ENOUGH rounds' answers; None before."""
        size = round(STEPS * math.log2(max(1.0, out)))
        near = (size - 1, size, size + 1)
        seen = [(n, dt) for size_ in near for at, n, dt in self.by_size.get(size_, ()) if at > since]
        answers, time = sum(n for n, _ in seen), sum(dt for _, dt in seen)
        return answers / time if time > 0 and answers >= ENOUGH * max(FEW, out) else None

    @staticmethod
    def _more(high: float, low: float, ratio: float = 2.0) -> bool:
        """Whether `high`, the rate of a window `ratio` times `low`'s, brought GAIN more answers a second a doubling."""
        return high >= (1.0 + GAIN) ** math.log2(ratio) * low

    def safe(self) -> float:
        """The most in flight that the server's pace answers within TIMEOUT_SHARE of --timeout: the window grows
        no further (before an answer, or without a --timeout: no bound). The pace is the lower of the readings' and
        the answers a second since the first request left: a first wave leaves all at once, and which of its
        requests the server took first is no order we know, so its readings alone can make the pace several times
        too fast (one slot: the first answer's reading is its load, 1 to 8, over one service time)."""
        rate = self.rate
        if rate is None:
            return math.inf
        elapsed = self.last_answer - self.first_sent
        if elapsed > 0:
            rate = min(rate, self.answers / elapsed)
        return max(1.0, rate * TIMEOUT_SHARE * self.timeout)

    def timed_out(self, load: int, waited: float) -> float | None:
        """An attempt abandoned after `waited` seconds (--timeout) with `load` in flight: the most in flight that
        the rate seen lately answers within the target; None before any answer (no rate to go by)."""
        self.interrupt()
        rate = self.rate
        if rate is None:
            return None
        if waited > 0 and load >= 1:  # load / waited bounds the rate from above (the answer would have come later)
            rate = min(rate, load / waited)
        return max(1.0, rate * self.target())
