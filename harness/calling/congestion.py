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
its `--parallel`), the limiter starts from that instead (limiter.py `serves`).

Latency that grows with the window is congestion only while the answers a second do NOT grow with it. A server that
batches all it holds (vLLM's continuous batching) answers more a second the more it holds, each answer later: held
where answers take QUEUE_K fastest ones, it gives well under what a larger window brings. So `QueueWatch` also
keeps the answers a second delivered at each size of window (counted as answers arrive over a round, with the
number in flight meanwhile: BBR's delivery rate), and a late answer holds the window only where twice as many in
flight did not bring GAIN more answers a second than half as many (`pays`); while it did, the window grows as slow
start does (BBR's startup: grow while the delivery rate still grows), and where it stopped paying it is held at the
most in flight that still paid (`knee`), never more than the pace answers within TIMEOUT_SHARE of --timeout. A
server whose rate is flat past its slots (llama.cpp's, our fake server) never pays past them, so it is held as
before; an API that does not queue never reaches this test (no answer is late), and 429s are limiter.py's.

The two sizes compared must have been seen at about the same time (the last FRESH rounds): a server's speed drifts
under a run, and the window is cut when answers come late, so the smaller sizes are seen in the slower spells.
Compared across the run, a larger window seen later (or in a faster spell) read as paying, and the knee took a
four-slot server's window to 36-60 in flight (until 2026-11-29: tests/calling/test_dispatch_slots.py). Where no
size at half the window was seen lately there is no verdict, and the queue rule holds, as it did before the knee was
added: a batching server whose doubling read as not paying (noise) stays where answers take QUEUE_K fastest ones
(docs/benchmarks.md has how often).
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
GAIN = 0.05  # a window twice as large is worth its latency while it brings at least this share more answers a second:
# with latency a + b x load (a batching server), doubling gains a / (a + b load), so growing until the gain falls
# under 5 % stops at 95 % of the most the server can give, whatever a and b are
STEPS = 4  # sizes of window told apart per doubling (a quarter of an octave: 16, 19, 23, 27, 32 ...)
SPAN = 32  # rounds kept for each size (a bound on memory: FRESH decides which of them are compared)
FRESH = 3  # two sizes are compared on the rounds of the last this many rounds of the larger (as many answers as it
# holds, each): slow start doubles the window a round, so half of it was seen a round ago; rounds older than that
# are another speed of the server. More let scatter read as paying; fewer let a batching server's knee lapse too
# soon (docs/benchmarks.md, "the knee's rounds of one time", has both).
FEW = 8  # rounds a size needs before its rate is compared: one or two are a first wave's order, not a pace


class QueueWatch:
    """The server's pace as our answers show it, and how many in flight keep latency within the target."""

    def __init__(self, timeout: float | None = None) -> None:
        self.timeout = timeout if timeout is not None and timeout > 0 else math.inf
        self.floor = math.inf  # the fastest answer's latency: a request that did not queue
        self.readings: deque[float] = deque(maxlen=RECENT)  # load / latency of the last answers
        self._rate: float | None = None
        self._since = self.answers = 0  # answers since the rate was read; in all
        self.first_sent, self.last_answer = math.inf, -math.inf  # the delivery rate since the first request
        # The answers a second delivered at each size of window, which the rate (the best lately, at whatever
        # window) cannot tell apart: when the last answers came (a round's worth) and how many were out as each
        # came; and by size (STEPS per doubling), the delivered rates of the last SPAN rounds with that many out.
        self.came: deque[tuple[float, int]] = deque(maxlen=RECENT)
        self.by_size: dict[int, deque[tuple[int, float]]] = {}  # (answers when the round ended, its rate)
        self.gaining = False  # the last answer queued, but a larger window still brings more answers a second
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

    def answered(self, load: int, latency: float, now: float = 0.0, out: int | None = None) -> float | None:
        """An answer `latency` seconds after it left with `load` requests in flight (`out` as it came, itself
        included; `load` if not given): the most in flight that keeps
        answers within the target, when this one took longer (it queued); None when it did not, or when a larger
        window still brings more answers a second (`gaining`: a server that batches what it holds).

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
        target = self.target()
        if latency <= target:
            # Within the target, but where a larger window paid lately (the knee: a batching server, once it has
            # queued), grow to it as slow start does: one slot an answer would take the window there only after the
            # rounds that showed it paying have lapsed (FRESH), and the queue rule would then hold it short of it.
            self.gaining = self.held and self.knee() > out
            return None
        # Latency grows with the window; that is congestion only where answers a second do not grow with it too. A
        # server that batches all it holds (vLLM) answers more a second the more it holds, each answer later: while
        # a window twice as large brings GAIN more answers a second, or a larger one did before (the knee), it is
        # not congestion, and the window grows as slow start does (TCP Vegas compares the rate a window should
        # bring with the rate it brings; BBR's startup grows while the delivery rate still grows by a quarter a
        # round trip): within TIMEOUT_SHARE of --timeout, never past it.
        limit, knee = TIMEOUT_SHARE * self.timeout, self.knee()
        if latency <= limit and (knee > out or (self.pays(out) and self.pays(2 * out) is None)):
            self.gaining = True
            return None
        rate = self.rate or 0.0
        held = rate * target
        # Queued: later than the target, and with more in flight than the pace answers within it (this second test
        # also keeps slow start growing: its answers left with a smaller window in flight than now). Held to that,
        # or to the most in flight that still paid (a batching server's knee: fewer lose answers a second, more
        # only add latency), never more than the pace answers within the timeout's share.
        hold = max(held, min(knee, rate * limit))
        if hold >= load:
            return None
        self.held = True
        return max(1.0, hold)

    def _delivered(self, now: float, out: int) -> None:
        """The answers a second over the last round (as many answers as were out, at least FEW), by the number in
        flight as they came. Counted as they arrive, not per request: which request the server took first (a first
        wave reaches it in no order we know) changes no count, and a batch answered at once is spread over its round
        (BBR's delivery rate: delivered over a round trip, with what was in flight meanwhile). A round ends where the
        clock moved on since the last answer, so that answers that came together are counted all or none."""
        came = self.came
        if came and now > came[-1][0] and len(came) > FEW:
            end, last = came[-1][0], list(came)
            start = last[-1 - min(len(last) - 1, max(FEW, last[-1][1]))][0]
            round_ = [n for t, n in last if start < t <= end]
            if end > start and len(round_) >= FEW:
                in_flight = sum(round_) / len(round_)
                size = round(STEPS * math.log2(in_flight))
                self.by_size.setdefault(size, deque(maxlen=SPAN)).append((self.answers, len(round_) / (end - start)))
        came.append((now, out))

    def pace(self, out: float, since: int = -1) -> float | None:
        """Answers a second delivered with about `out` in flight (its size and the two beside it: within a fifth):
        the median of those rounds (ended after `since` answers), once there are FEW; None before."""
        size = round(STEPS * math.log2(max(1.0, out)))
        seen = sorted(r for near in (size - 1, size, size + 1) for at, r in self.by_size.get(near, ()) if at > since)
        return seen[len(seen) // 2] if len(seen) >= FEW else None

    def pays(self, out: float) -> bool | None:
        """Whether `out` in flight brought GAIN more answers a second than half as many did, in the rounds of the
        last FRESH rounds' time; None: not both seen in that time."""
        since = self.answers - FRESH * max(FEW, round(out))
        here, half = self.pace(out, since), self.pace(out / 2, since)
        return None if here is None or half is None else here >= (1.0 + GAIN) * half

    def knee(self) -> float:
        """The most in flight that still paid: the largest size seen lately that brought GAIN more answers a second
        than half of it did in the same time (1 where no doubling paid: a server whose rate is flat past its slots)."""
        paid = [size for size in self.by_size if self.pays(2 ** (size / STEPS))]
        return 2 ** (max(paid) / STEPS) if paid else 1.0

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
        rate = self.rate
        if rate is None:
            return None
        if waited > 0 and load >= 1:  # load / waited bounds the rate from above (the answer would have come later)
            rate = min(rate, load / waited)
        return max(1.0, rate * self.target())
