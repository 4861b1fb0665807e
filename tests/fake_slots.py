"""A server that computes S requests at once and queues the rest, as local servers do (issue 42): llama.cpp's server
with `--parallel S` (its slots), Ollama's OLLAMA_NUM_PARALLEL, vLLM's max_num_seqs.

`Slots.serve()` waits, first come first served, for one of S slots, then holds it for the service time. A request
abandoned while it waits (its client gave up: --timeout) is dropped, as llama.cpp drops a queued task whose
connection closed; one abandoned while computed is computed to the end for nobody (`wasted`), as llama.cpp does.
Used by tests/fake_server.py (`slots=`, on the wall clock, for tests/bench/bench_local_servers.py) and by
`SlotBackend`, the same server in virtual time (tests/virtual_clock.py) for the limiter's tests.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from harness.types import Completion, Request, ServerQueue
from tests.stub_backend import StubBackend


class Slots:
    def __init__(self, slots: int, service: float | Callable[[int], float]) -> None:
        self.slots = slots
        # Seconds one request holds a slot; a function of how many slots are busy models a server whose requests
        # slow each other down (a CPU shared by a batch): service(busy).
        self.service = service if callable(service) else (lambda busy, s=float(service): s)
        self._free: asyncio.Semaphore | None = None  # made in the loop that serves
        self.busy = self.waiting = self.max_waiting = 0
        self.served = self.wasted = self.dropped = 0

    async def serve(self) -> None:
        """One request: a slot (in order of arrival), then its service time; raises CancelledError if abandoned."""
        if self._free is None:
            self._free = asyncio.Semaphore(self.slots)
        free = self._free
        queued = free.locked()  # every slot busy: it waits
        self.waiting += queued
        self.max_waiting = max(self.max_waiting, self.waiting)
        try:
            await free.acquire()
        except asyncio.CancelledError:
            self.dropped += 1  # never started: nothing computed
            raise
        finally:
            self.waiting -= queued
        self.busy += 1
        computing = asyncio.ensure_future(asyncio.sleep(self.service(self.busy)))

        def done(_: object) -> None:
            self.busy -= 1
            free.release()

        computing.add_done_callback(done)
        try:
            await asyncio.shield(computing)
        except asyncio.CancelledError:
            self.wasted += 1  # computed to the end, for nobody
            raise
        self.served += 1


class SlotBackend(StubBackend):
    """A local server in virtual time: `Slots` behind a network of `net` seconds each way. `states`: it answers
    the capacity question (llama.cpp's /props) with its slots; `says_queue`: the queue question (vLLM's /metrics)
    with its busy slots and those waiting."""

    name = "local-server"

    def __init__(
        self, slots: int, service: float | Callable[[int], float], states: bool = False, says_queue: bool = False
    ) -> None:
        self.server = Slots(slots, service)
        self.states, self.says_queue = states, says_queue
        self.asked = 0  # queue questions answered
        self.net = 0.0005
        self.latencies: list[float] = []
        self.first_sent: float | None = None
        self.last_answer = 0.0

    async def capacity(self) -> int | None:
        return self.server.slots if self.states else None

    async def queue(self) -> ServerQueue | None:
        if not self.says_queue:
            return None
        self.asked += 1
        return ServerQueue(self.server.busy, self.server.waiting)

    async def send(self, request: Request) -> Completion:
        loop = asyncio.get_running_loop()
        sent = loop.time()
        if self.first_sent is None:
            self.first_sent = sent
        await asyncio.sleep(self.net)
        await self.server.serve()
        await asyncio.sleep(self.net)
        self.last_answer = loop.time()
        self.latencies.append(self.last_answer - sent)
        return Completion(request.id, "3")
