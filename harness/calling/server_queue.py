"""How many in flight a server's own word on its queue allows (issue 42): vLLM's GET /metrics, read every QUEUE_POLL
seconds while requests are out (dispatch.py, harness/calling/backends/gauges.py).

Latencies can only suggest what a server says outright here. While it is busy and nothing waits, it computes every
request it was sent: latency that grows with the window is its batch's (vLLM's continuous batching answers more a second
the more it holds), not a queue's, so late answers hold nothing and no larger window is tried step by step
(congestion.py): the window grows at once to what the pace answers within a quarter of --timeout (congestion.py `safe`),
--concurrency at most ("room"). Where requests wait while those running stay flat, what runs is what the server computes
at once (`capacity`: its --max-num-seqs, or what its KV cache holds), and the window goes to that and as many again
("full"): vLLM finishes requests in bursts (a step ends many sequences at once), and a burst's places are refilled at
once only from requests already waiting there, since ours reach it through its HTTP server and tokenizer later; a queue
as deep as what runs keeps it fed through a burst of any size, where the quarter more that stated slots get (limiter.py
`serves`) left it running well under its capacity with nothing waiting (docs/benchmarks.md has the readings). The
queue's part stays within what the pace answers within a quarter of --timeout. Once the capacity is known, readings that
are neither "room" nor "full" keep the window where it is ("hold"), whatever the latencies suggest: latency there is the
queue kept on purpose.

One reading is a moment. A first wave makes a server's queue for a moment whatever its capacity: vLLM admits new
requests a step at a time, as its token budget for a step allows, so 128 arriving at once wait a few steps while those
running climb. And a server that queues has nothing waiting for the moment between a place freed and the next request's
arrival. So "full" needs two readings in a row (QUEUE_POLL apart) with requests waiting and those running not climbing
(by CLIMB at most), and "room" two in a row busy with nothing waiting (an idle server before a run's first request says
nothing of its room). Where the readings say nothing of either and no capacity is known yet, or no reading is recent
(within STALE: a server that stopped answering GET /metrics is watched as one that never did), the latencies decide
(congestion.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from harness.types import ServerQueue

QUEUE_POLL = 1.0  # seconds between two readings of a server's queue while requests are out
STALE = 3 * QUEUE_POLL  # a reading older than this (seconds) says nothing
QUEUED = 1.0  # beyond what the server computes at once, this share of it waits there (above: a burst's refill)
CLIMB = 1.25  # those running climb (a wave admitted step by step) where a reading has more than this times the last


@dataclass(frozen=True)
class Word:
    """What the server's last two readings say: "room" (busy, nothing waiting: grow, to `most` at most), "full"
    (requests wait, those running flat: the window to `most`, what runs and QUEUED more, up or down), or "hold"
    (neither, its capacity known: keep the window, whatever the latencies suggest)."""

    kind: Literal["room", "full", "hold"]
    most: float


class SaidQueue:
    """The server's last readings of its queue, what they allow, and what it computes at once where it showed that."""

    def __init__(self) -> None:
        self.last: tuple[float, ServerQueue] | None = None  # (when, what) of the last reading
        self.allows: Word | None = None  # what the last reading (and the one before it) say
        self.capacity: int | None = None  # what runs while requests wait (its plateau), or more where it had room
        self.readings = self.full = 0  # readings taken; those that read the server as full

    def said(self, queue: ServerQueue, now: float) -> None:
        """A reading, taken at `now`."""
        before = self.last[1] if self.last is not None and now - self.last[0] <= STALE else None
        self.last = (now, queue)
        self.readings += 1
        if before is not None and _room(queue) and _room(before):
            if self.capacity is not None:  # it computes more than it was read to: the full reading was no bound
                self.capacity = max(self.capacity, queue.running)
            self.allows = Word("room", self._most())
        elif before is not None and _waits(queue) and _waits(before) and queue.running <= CLIMB * before.running:
            self.full += 1
            self.capacity = queue.running
            self.allows = Word("full", self._most())
        else:
            self.allows = None if self.capacity is None else Word("hold", self._most())

    def _most(self) -> float:
        """What the server computes at once and QUEUED of it waiting (a capacity is at least 1: read while busy)."""
        return math.inf if self.capacity is None else self.capacity + math.ceil(QUEUED * self.capacity)

    def word(self, now: float) -> Word | None:
        """What the last two readings say; None where they say nothing (no capacity known, neither room nor full) or
        no reading is recent (within STALE): the latencies decide (congestion.py)."""
        return self.allows if self.last is not None and now - self.last[0] <= STALE else None


def _room(queue: ServerQueue) -> bool:
    """Busy, and nothing waits: every request sent is computed."""
    return queue.running > 0 and queue.waiting == 0


def _waits(queue: ServerQueue) -> bool:
    """Busy, and requests wait for a place."""
    return queue.running > 0 and queue.waiting > 0
