"""QueueWatch's delivered rate by size of window (harness/calling/congestion.py), fed answers directly: what a
larger window brought, counted as answers arrive, decides whether latency that grows with it is congestion."""

from __future__ import annotations

import pytest

from harness.calling.congestion import FEW, FRESH, GAIN, QueueWatch


def steady(watch: QueueWatch, out: int, rate: float, answers: int, start: float, together: int = 1) -> float:
    """`answers` answers at `rate` a second with `out` in flight, `together` at a time (a batch answered at once);
    each left `out / rate` seconds before it came (Little's law). Returns the clock after the last."""
    now = start
    for i in range(answers):
        if i % together == 0:
            now += together / rate
        watch.answered(out, out / rate, now, out)
    return now


def test_answers_that_come_together_are_counted_all_or_none() -> None:
    # 8 answered at once every 0.8 s: 10 a second. Counting a round up to the first of a batch (its 7 others not yet
    # in) read 1.25-10 a second, or 8 / 0 at the batch's own instant.
    watch = QueueWatch(timeout=120.0)
    steady(watch, 8, 10.0, 20 * FEW, 0.0, together=8)
    assert watch.pace(8) == pytest.approx(10.0)


@pytest.mark.parametrize(("gain", "pays"), [(0.0, False), (GAIN / 2, False), (2 * GAIN, True), (1.0, True)])
def test_a_larger_window_pays_only_when_it_brings_gain_more_answers(gain: float, pays: bool) -> None:
    watch = QueueWatch(timeout=120.0)
    now = steady(watch, 8, 10.0, 4 * FEW, 0.0)
    steady(watch, 16, 10.0 * (1 + gain), 4 * FEW, now)
    assert watch.pays(16) is pays
    assert watch.knee() == (pytest.approx(16.0) if pays else 1.0)  # where it paid: the most in flight that did


def test_a_window_never_seen_at_half_its_size_is_not_known_to_pay() -> None:
    watch = QueueWatch(timeout=120.0)
    steady(watch, 16, 10.0, 4 * FEW, 0.0)
    assert watch.pace(16) == pytest.approx(10.0) and watch.pace(8) is None
    assert watch.pays(16) is None and watch.knee() == 1.0


def test_rounds_at_half_the_window_from_another_time_are_not_compared() -> None:
    """16 in flight brought a fifth more answers a second than 8 did just before: it pays. Held at 16 for FRESH of
    its rounds more, the rounds at 8 are of another time (a server whose speed drifts reads as a window that pays):
    no verdict, and no knee."""
    watch = QueueWatch(timeout=120.0)
    now = steady(watch, 8, 10.0, 4 * FEW, 0.0)
    now = steady(watch, 16, 12.0, 3 * FEW, now)
    assert watch.pays(16) is True and watch.knee() == pytest.approx(16.0)
    steady(watch, 16, 12.0, FRESH * 16, now)
    assert watch.pace(16) == pytest.approx(12.0) and watch.pace(8) == pytest.approx(10.0)  # still kept
    assert watch.pays(16) is None and watch.knee() == 1.0


def test_a_queue_past_the_slots_is_held_and_a_batch_that_still_pays_is_not() -> None:
    """The same late answer (3 s, the fastest 0.5 s): held where answers a second were flat from 8 to 16 in flight,
    let grow (None, `gaining`) where 16 brought a fifth more than 8."""
    for rise, held in ((1.0, True), (1.2, False)):
        watch = QueueWatch(timeout=120.0)
        watch.answered(1, 0.5, 0.5, 1)  # the fastest answer: the target is QUEUE_K x 0.5 s
        now = steady(watch, 8, 10.0, 4 * FEW, 1.0)
        now = steady(watch, 16, 10.0 * rise, 4 * FEW, now)
        verdict = watch.answered(16, 3.0, now + 0.1, 16)
        assert (verdict is not None) is held and watch.gaining is not held, (rise, verdict)


def test_within_the_target_the_window_grows_to_a_knee_only_on_a_server_that_queued() -> None:
    """16 in flight brought a fifth more than 8, and an answer now comes within the target with 8 out: on a server
    whose answers have queued (a hold was said), that is a batching server below its knee, and the window grows to
    it as slow start does (`gaining`); before, one slot a round let the rounds that showed the knee lapse, and the
    queue rule then held the window short of it (vLLM's server, 2026-11-30: 37 in flight where 64 paid). An API
    whose answers never queued is not touched (its window is the 429s'); nor is a window at its knee already."""
    for queued, out, gaining in ((True, 8, True), (False, 8, False), (True, 16, False)):
        watch = QueueWatch(timeout=120.0)
        watch.answered(1, 0.5, 0.5, 1)  # the fastest answer: the target is QUEUE_K x 0.5 s
        now = steady(watch, 8, 10.0, 4 * FEW, 1.0)
        now = steady(watch, 16, 12.0, 3 * FEW, now)
        watch.held = queued
        assert watch.knee() == pytest.approx(16.0)
        assert watch.answered(out, 1.0, now + 0.1, out) is None  # within the target (1.5 s): no hold either way
        assert watch.gaining is gaining, (queued, out)


def test_a_hold_marks_the_server_as_one_that_queues() -> None:
    watch = QueueWatch(timeout=120.0)
    watch.answered(1, 0.5, 0.5, 1)
    now = steady(watch, 8, 10.0, 4 * FEW, 1.0)
    assert not watch.held
    assert watch.answered(8, 3.0, now + 0.1, 8) is None and not watch.held  # late, but 8 is within the pace's
    assert watch.answered(32, 3.0, now + 0.2, 32) == pytest.approx(15.0) and watch.held  # 10/s x 1.5 s: held
