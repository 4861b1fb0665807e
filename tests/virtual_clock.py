"""An asyncio event loop on a clock of its own, for tests of timed behaviour (pacing, pauses, stalls).

Whenever nothing is ready to run, the clock jumps to the next timer instead of waiting for it. A test then sees
exactly when each thing happened, in no wall time, and a busy machine cannot change what it sees (the issue 33
rule: no assertion on wall-clock time). `stall(s)` is the whole process stopping for s seconds, as a busy machine
stops it: time passes while no callback runs. Code under test must read the loop's clock (`loop.time`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


class VirtualClockLoop(asyncio.SelectorEventLoop):
    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0
        select = self._selector.select  # type: ignore[attr-defined]

        def jump(timeout: float | None = None) -> list[Any]:
            # Poll without blocking; with nothing ready, move the clock to the next timer (`timeout` away) rather
            # than sleep until it. None (no timer at all): wait for I/O as a real loop would.
            events: list[Any] = select(None if timeout is None else 0)
            if not events and timeout:
                self.now += timeout
            return events

        self._selector.select = jump  # type: ignore[attr-defined]

    def time(self) -> float:
        return self.now

    def stall(self, seconds: float) -> None:
        """The process stops for `seconds`: timers come due meanwhile, and run only when the loop goes on."""
        self.now += seconds


def run_virtual(scenario: Callable[[VirtualClockLoop], Awaitable[T]]) -> T:
    """Run `scenario(loop)` to the end on a fresh VirtualClockLoop."""
    loop = VirtualClockLoop()
    try:
        return loop.run_until_complete(scenario(loop))
    finally:
        loop.close()
