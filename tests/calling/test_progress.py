"""The progress bar's estimate (harness/calling/progress.py) against the length of the run it estimates.

A deterministic fake local backend runs on a clock of its own: loading takes 80 s, then batches of 8 prompts,
longest first, each taking time in proportion to its padded tokens, as the hf backend's batches do on a CPU (the
quick start of issue 45: silent for 83 s, then 4 h 38 min estimated for an 8 min run). No wall-clock time is read.
"""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import AsyncIterator, Sequence

import pytest

from harness.calling import progress
from harness.calling.backends.base import LocalBackend
from harness.calling.dispatch import call
from harness.calling.options import DispatchOptions, DispatchStats
from harness.calling.progress import Estimate
from harness.types import Completion, Request

LOAD_S, BATCH, S_PER_TOKEN = 80.0, 8, 0.004


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


class BatchedModel(LocalBackend):
    """Loads, then answers in padded batches of 8, longest first; every step moves the clock, not the wall."""

    name, model = "fake-local", "fake"

    def __init__(self, clock: Clock) -> None:
        self.clock = clock

    def describe(self) -> dict[str, object]:
        return {"fake": True}

    async def complete(self, requests: Sequence[Request]) -> AsyncIterator[Completion]:
        self.clock.t += LOAD_S
        if self.on_work is not None:
            self.on_work()
        ordered = sorted(requests, key=lambda r: -len(r.prompt))
        for start in range(0, len(ordered), BATCH):
            batch = ordered[start : start + BATCH]
            padded = len(batch) * (max(len(r.prompt) for r in batch) // 4 + 20)
            self.clock.t += padded * S_PER_TOKEN
            for r in batch:
                yield Completion(r.id, "3")
            await asyncio.sleep(0)  # as hf awaits its worker thread between batches: the loop turns


def seconds(text: str) -> float:
    """tqdm's interval ("07:40", "1:02:03") in seconds."""
    parts = [int(p) for p in text.split(":")]
    return float(sum(p * 60**i for i, p in enumerate(reversed(parts))))


def requests(n: int, seed: int) -> list[Request]:
    rng = random.Random(seed)
    return [Request(str(i), "w" * rng.randint(300, 1600)) for i in range(n)]


@pytest.mark.parametrize("seed", [0, 1])
def test_the_first_estimate_is_near_the_time_the_run_really_takes(
    seed: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    clock = Clock()
    monkeypatch.setattr(progress, "now", clock)
    model = BatchedModel(clock)
    replies = call(model, requests(200, seed), DispatchOptions(progress=True), DispatchStats(), desc="fake")
    assert len(replies.completions) == 200
    total = clock.t
    shown = re.findall(r"left=~([\d:]+)", capsys.readouterr().err)
    assert shown, "the bar showed no estimate"
    first_batch = (len(max((r.prompt for r in requests(200, seed)), key=len)) // 4 + 20) * BATCH * S_PER_TOKEN
    # The first estimate is shown when the first batch ends: the real time left then is the run's length after it.
    really_left = total - LOAD_S - first_batch
    assert 0.75 * really_left <= seconds(shown[0]) <= 1.35 * really_left, (shown[0], really_left)
    # tqdm's own estimate at that moment (one answer in LOAD_S + first_batch seconds) was 1 h 33 min and more.
    assert (LOAD_S + first_batch) * 199 > 20 * really_left


def test_cached_answers_leave_the_work_and_never_the_rate() -> None:
    clock = Clock()
    reqs = [Request(str(i), "x" * 400) for i in range(10)]  # 120 tokens each with the 20 of output
    est = Estimate(reqs, clock)
    clock.t = 50.0  # loading
    est.begin()
    for i in range(5):
        est.done(Completion(str(i), "3", cached=True))  # instant: no rate from them
    assert est.seconds_left() is None
    clock.t = 60.0
    est.done(Completion("5", "3"))  # 120 tokens in 10 s, 4 requests (480 tokens) left: 40 s
    assert est.seconds_left() == pytest.approx(40.0)
