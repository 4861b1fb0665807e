"""The progress bar of a run's calling step, and its remaining-time estimate.

The estimate is made from the work done, not from the queries counted: each request weighs its prompt (in
characters, about four per token) and its output budget, and the rate is the weight answered since the work began
(a local model loaded: `LocalBackend.on_work`) over the time since. tqdm's own estimate divides the queries left by
the rate of its first update: a local model's first answer comes after the model loaded and the first batch (the
longest prompts) ran, and alone, since a batch's answers arrive together, so it estimated 4 h 38 min for an 8 min
run (issue 45). Answers from the cache take no time: they leave the work to do, never the rate.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from tqdm import tqdm

from harness.types import Completion, Request

now = time.monotonic  # the estimate's clock (a test sets its own)
CHARS_PER_TOKEN = 4  # a prompt's weight in tokens, near enough for an estimate (tiktoken's English average)


def weight(request: Request) -> float:
    """The work of one request, in tokens: its prompt's and its output budget's."""
    return len(request.prompt) / CHARS_PER_TOKEN + request.max_tokens


class Estimate:
    """Seconds left, from the weight answered since `begin()` and the weight still to answer."""

    def __init__(self, requests: Sequence[Request], clock: Callable[[], float] | None = None) -> None:
        self.clock = clock or now
        self.weights = {r.id: weight(r) for r in requests}
        self.left = sum(self.weights.values())
        self.worked = 0.0
        self.began = self.clock()

    def begin(self) -> None:
        """The work starts now (a local model is loaded): what came before (loading) is not its rate."""
        self.began, self.worked = self.clock(), 0.0

    def done(self, c: Completion) -> None:
        w = self.weights.get(c.request_id, 0.0)
        self.left -= w
        if not c.cached:
            self.worked += w

    def seconds_left(self) -> float | None:
        """None until some work was answered (no rate yet)."""
        spent = self.clock() - self.began
        if self.worked <= 0 or spent <= 0:
            return None
        return max(self.left, 0.0) * spent / self.worked


class Bar:
    """tqdm's bar with the estimate above, moved once per turn of the event loop: a batch's answers arrive in one
    turn and move it together, so neither the bar nor the estimate ever sees one answer of a batch alone."""

    def __init__(
        self,
        requests: Sequence[Request],
        desc: str,
        disable: bool,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.estimate = Estimate(requests, clock)
        self.pending = 0
        self.postfix: dict[str, Any] = {}
        self.first: tuple[float, float] | None = None  # (seconds of work, seconds left) at the first estimate
        self.tqdm = tqdm(  # delay=2: quick runs print nothing; longer ones get the estimate, invalid, errors, cost
            total=len(requests), desc=desc, unit="q", file=sys.stderr, delay=2, disable=disable,
            bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}, {rate_fmt}{postfix}]",
        )  # fmt: skip

    @property
    def disable(self) -> bool:
        return bool(self.tqdm.disable)

    def begin(self) -> None:
        self.estimate.begin()

    def done(self, c: Completion, postfix: dict[str, Any]) -> None:
        """One answer: counted now, shown when the loop's turn ends (with the others of its batch)."""
        self.estimate.done(c)
        self.postfix = postfix
        if self.pending == 0:
            try:
                asyncio.get_running_loop().call_soon(self.flush)
            except RuntimeError:  # no loop (a caller outside dispatch): show it now
                self.pending += 1
                self.flush()
                return
        self.pending += 1

    def flush(self) -> None:
        left = self.estimate.seconds_left()
        shown = {"left": f"~{tqdm.format_interval(left)}"} if left is not None else {}
        self.tqdm.set_postfix(shown | self.postfix, refresh=False)
        n, self.pending = self.pending, 0
        first = self.first is None and left is not None
        if first:
            self.first = (self.estimate.clock() - self.estimate.began, left)  # type: ignore[assignment]
        self.tqdm.update(n)
        if first:
            self.tqdm.refresh()  # the first estimate is shown at once, whatever tqdm's own pacing says

    def close(self) -> None:
        if self.pending:
            self.flush()
        self.tqdm.close()

    def __enter__(self) -> Bar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
