"""QueueWatch (harness/calling/congestion.py), fed answers directly: the answers a second delivered at a steady
window, counted by instant, and a try's steps (the hold, twice it, the hold again) that decide whether a larger
window is worth its latency."""

from __future__ import annotations

import pytest

from harness.calling.congestion import ENOUGH, FEW, FRESH, GAIN, QueueWatch


def steady(
    watch: QueueWatch, out: int, rate: float, answers: int, start: float, together: int = 1, apart: float = 0.0
) -> float:
    """`answers` answers at `rate` a second with `out` in flight, `together` at a time (a batch answered at once,
    `apart` seconds between two of one batch, each taking one more out of flight); each left `out / rate` seconds
    before it came (Little's law). Returns the clock at the last."""
    now = last = start
    for i in range(answers):
        if i % together == 0:
            now += together / rate
        last = now + (i % together) * apart
        watch.answered(out, out / rate, last, out - i % together)
    return last


def queued() -> tuple[QueueWatch, float]:
    """A watch whose fastest answer took 0.2 s (the target: 0.6 s), whose server has queued before, and which has
    seen it answer 10 a second with 6 out (each within the target: the hold); and the clock."""
    watch = QueueWatch(timeout=120.0)
    watch.answered(1, 0.2, 0.2, 1)
    watch.held = True
    return watch, steady(watch, 6, 10.0, 30, 1.0)


def test_a_batch_answered_within_a_few_milliseconds_is_counted_all_or_none() -> None:
    # 26 answered 0.2 ms apart every 1.3 s, 32 out as each batch began: 20 a second, as vLLM's server on this CPU
    # answers. Counted from the answer a round's worth back, which falls inside a batch, this read up to hundreds
    # of answers a second (until 2026-11-30: the clock moves on between two answers of one batch).
    watch = QueueWatch(timeout=120.0)
    watch.answered(1, 0.5, 0.5, 1)
    steady(watch, 32, 20.0, 26 * 12, 1.0, together=26, apart=2e-4)
    assert watch.pace(32) == pytest.approx(20.0, rel=1e-6)


def test_a_drain_gives_no_rate_at_any_size_and_a_steady_window_does() -> None:
    """A first wave of 48 drained to 12 (the window cut, nothing sent): each round passes through many sizes, and
    its rate is the wave's, not a size's (compared across a drain, a four-slot llama.cpp server read as paying in
    all six traced runs, 2026-11-30). Held at 12, the same server's rate is read."""
    watch = QueueWatch(timeout=120.0)
    now = 0.0
    for out in range(48, 11, -1):
        now += 0.5
        watch.answered(49 - out, now, now, out)
    assert all(watch.pace(2 ** (size / 4)) is None for size in range(8, 24))
    steady(watch, 12, 2.0, ENOUGH * 12 + 2 * 12, now)
    assert watch.pace(12) == pytest.approx(2.0)


def drive(watch: QueueWatch, rates: dict[str, float], now: float) -> tuple[float, list[tuple[str, float]]]:
    """Answers at the window each step of a try holds (`fixed`), at the rate given for that step, until it ends;
    returns the clock and the steps seen."""
    seen: list[tuple[str, float]] = []
    while watch.step is not None:
        kind, window, _ = watch.step
        if not seen or seen[-1] != (kind, window):
            seen.append((kind, window))
        assert watch.fixed() == window
        now = steady(watch, int(window), rates[kind], 1, now)
    return now, seen


def test_a_late_answer_at_the_hold_begins_a_try_and_one_in_a_drain_does_not() -> None:
    watch, now = queued()
    assert watch.answered(40, 4.0, now + 1, 40) == pytest.approx(6.0) and watch.step is None  # 40 out: a drain
    steady(watch, 6, 9.0, 1, now + 2)  # 6 out, 0.67 s: late at the hold (10/s x 0.6 s), and a try begins there
    assert watch.step is not None and watch.step[:2] == ("before", 6.0) and watch.fixed() == 6.0


@pytest.mark.parametrize(
    ("before", "tried", "after", "kept"),
    [
        (10.0, 10.0, 10.0, False),  # a flat server: nothing gained past its slots
        (10.0, 10.0 * (1 + GAIN / 2), 10.0, False),  # under GAIN more
        (10.0, 12.0, 10.0, True),  # a batching server: a fifth more at twice the window
        (10.0, 12.0, 12.0, False),  # a server that sped up under the try: the hold after it is as fast
    ],
)
def test_a_try_is_kept_only_where_twice_the_hold_brought_gain_more_than_the_hold_before_and_after(
    before: float, tried: float, after: float, kept: bool
) -> None:
    watch, now = queued()
    now = steady(watch, 6, 9.0, 1, now)  # late at the hold: the try begins
    watch.ceiling = 12.0  # no second try after a kept one (it would begin at once from 12)
    now, seen = drive(watch, {"before": before, "try": tried, "after": after}, now)
    went_back = tried >= (1 + GAIN) * before
    assert seen == [("before", 6.0), ("try", 12.0)] + ([("after", 6.0)] if went_back else [])
    assert watch.knee() == (12.0 if kept else 1.0)
    assert watch.pace(12) == pytest.approx(tried)  # the try's rate, read on its own rounds


def test_a_try_given_up_makes_the_next_wait_twice_as_long_and_a_kept_one_none() -> None:
    watch, now = queued()
    now = steady(watch, 6, 9.0, 1, now)
    now, _ = drive(watch, {"before": 10.0, "try": 10.0, "after": 10.0}, now)
    first = watch.next_try - watch.answers
    assert first == FRESH * 12
    now = steady(watch, 6, 9.0, first - 1, now)  # late at the hold meanwhile, but no try before next_try
    assert watch.step is None
    now = steady(watch, 6, 9.0, 1, now)
    assert watch.step is not None and watch.step[0] == "before"
    now, _ = drive(watch, {"before": 10.0, "try": 10.0, "after": 10.0}, now)
    assert watch.next_try - watch.answers == 2 * first
    watch.next_try = watch.answers
    now = steady(watch, 6, 10.0, 30, now)  # steady at the hold again, each answer within the target
    now = steady(watch, 6, 9.0, 1, now)
    now, seen = drive(watch, {"before": 10.0, "try": 12.0, "after": 10.0}, now)
    # kept: the next try (twice 12) began at once from it, its rate as the hold's; here it brought nothing more
    assert seen == [("before", 6.0), ("try", 12.0), ("after", 6.0), ("try", 24.0)]
    assert watch.knee() == 12.0 and watch.step is None


def test_a_timeout_gives_a_try_up() -> None:
    watch, now = queued()
    steady(watch, 6, 9.0, 1, now)
    assert watch.step is not None
    watch.timed_out(6, 120.0)
    assert watch.step is None and watch.fixed() is None and watch.next_try > watch.answers


def test_within_the_target_the_window_grows_to_a_knee_only_on_a_server_that_queued() -> None:
    """A window of 16 paid, and an answer now comes within the target with 8 out: on a server whose answers have
    queued (a hold was said), that is a batching server below its knee, and the window grows to it at once
    (`gaining`). An API whose answers never queued is not touched (its window is the 429s'); nor is a window at its
    knee already."""
    for queued_, out, gaining in ((True, 8, True), (False, 8, False), (True, 16, False)):
        watch = QueueWatch(timeout=120.0)
        watch.answered(1, 0.5, 0.5, 1)  # the fastest answer: the target is 1.5 s
        watch.held, watch.paid = queued_, 16.0
        assert watch.answered(out, 1.0, 1.1, out) is None  # within the target: no hold either way
        assert watch.gaining is gaining, (queued_, out)


def test_a_hold_marks_the_server_as_one_that_queues() -> None:
    watch = QueueWatch(timeout=120.0)
    watch.answered(1, 0.5, 0.5, 1)
    now = steady(watch, 8, 10.0, 4 * FEW, 1.0)
    assert not watch.held
    assert watch.answered(8, 3.0, now + 0.1, 8) is None and not watch.held  # late, but 8 is within the pace's
    assert watch.answered(32, 3.0, now + 0.2, 32) == pytest.approx(15.0) and watch.held  # 10/s x 1.5 s: held
    assert watch.step is None  # a hold, not a try: 32 is a drain from above the hold
