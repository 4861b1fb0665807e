"""What a server's word on its queue allows (harness/calling/server_queue.py, issue 42), from two readings in a row:
busy with nothing waiting, grow; requests waiting while those running stay flat, what runs and as many again (its
capacity and a queue as deep), up or down; then, with the capacity known, hold whatever else the readings show. A
first wave being admitted step by step, one reading alone, an idle server or an old reading say nothing (the
latencies decide). The readings below are the ones vLLM's server gave under a first wave of 128 here
(docs/benchmarks.md: it ran at most 64, the rest waited)."""

from __future__ import annotations

import math

from harness.calling.server_queue import CLIMB, QUEUE_POLL, QUEUED, STALE, SaidQueue, Word
from harness.types import ServerQueue


def after(*readings: tuple[int, int]) -> SaidQueue:
    said = SaidQueue()
    for i, (running, waiting) in enumerate(readings):
        said.said(ServerQueue(running, waiting), i * QUEUE_POLL)
    return said


def word(*readings: tuple[int, int]) -> Word | None:
    return after(*readings).word((len(readings) - 1) * QUEUE_POLL)


def test_a_busy_server_with_nothing_waiting_at_two_readings_has_room() -> None:
    assert word((100, 0), (128, 0)) == Word("room", math.inf)
    assert word((100, 60), (128, 0)) is None  # one reading with nothing waiting: a moment
    assert word((0, 0), (0, 0)) is None  # idle, or requests still on their way in (vLLM's first second here)
    assert word((0, 0), (18, 0)) is None
    assert word((1, 0), (1, 0)) == Word("room", math.inf)  # one running is busy


def test_requests_waiting_at_two_readings_with_those_running_flat_is_full_at_what_runs() -> None:
    said = after((0, 0), (21, 0), (43, 85), (64, 64), (64, 43))  # 43 -> 64: climbing; 64 -> 64: flat
    assert said.word(4 * QUEUE_POLL) == Word("full", 64 + math.ceil(QUEUED * 64)) == Word("full", 128)
    assert said.capacity == 64 and said.full == 1 and said.readings == 5
    assert word((43, 85), (64, 64)) is None  # a wave still being admitted
    assert CLIMB * 43 < 64 and CLIMB * 61 >= 65
    assert word((61, 67), (65, 45)) == Word("full", 130)  # climbing by less than CLIMB: flat
    assert word((40, 20), (50, 20)) == Word("full", 100)  # by CLIMB exactly: flat still
    assert word((5, 2), (4, 9)) == Word("full", 8)  # fewer running: full at what runs now
    assert word((1, 1), (1, 1)) == Word("full", 2)  # one slot: it and one waiting
    assert word((40, 1), (40, 0)) is None  # one reading of each, the capacity unknown: nothing said
    assert word((40, 0), (40, 5)) is None
    assert word((0, 5), (0, 5)) is None  # nothing running: no capacity to read (a server not started yet)


def test_once_the_capacity_is_known_other_readings_hold_and_room_grows_past_it_only_where_more_ran() -> None:
    full = ((64, 64), (64, 43))
    assert word(*full, (64, 0)) == Word("hold", 128)  # one reading with nothing waiting: a moment
    assert word(*full, (40, 0), (58, 0)) == Word("room", 128)  # underfed: room, up to the capacity and its queue
    said = after(*full, (70, 0), (80, 0))  # room with more running than the plateau: the full reading was no bound
    assert said.word(3 * QUEUE_POLL) == Word("room", 160) and said.capacity == 80
    assert word(*full, (64, 43), (20, 30)) == Word("full", 40)  # a new plateau, lower (another client, say)


def test_an_old_reading_says_nothing_and_a_gap_breaks_the_pair() -> None:
    said = after((40, 30), (40, 30))
    assert said.word(QUEUE_POLL + STALE) is not None
    assert said.word(QUEUE_POLL + STALE + 0.01) is None
    late = SaidQueue()
    late.said(ServerQueue(40, 30), 0.0)
    late.said(ServerQueue(40, 30), STALE + 0.01)  # the reading before is too old to pair with
    assert late.word(STALE + 0.01) is None and late.full == 0
    just = SaidQueue()
    just.said(ServerQueue(40, 30), 0.0)
    just.said(ServerQueue(40, 30), STALE)  # STALE apart exactly: still a pair
    assert just.word(STALE) == Word("full", 80)
    assert SaidQueue().word(0.0) is None
