"""Send requests through a backend and account for every one exactly once."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from harness.backends.base import Backend
from harness.types import Completion, Request


async def _collect(
    backend: Backend, requests: Sequence[Request], on_done: Callable[[Completion], None]
) -> dict[str, Completion]:
    wanted = {r.id for r in requests}
    done: dict[str, Completion] = {}
    async for completion in backend.complete(requests):
        if completion.request_id not in wanted or completion.request_id in done:
            # A backend bug, not a model answer: refuse it rather than score a query twice.
            raise RuntimeError(f"backend {backend.name} answered unknown or repeated id {completion.request_id!r}")
        done[completion.request_id] = completion
        on_done(completion)
    for r in requests:
        if r.id not in done:
            done[r.id] = Completion(r.id, None, error=f"backend {backend.name} returned no completion")
            on_done(done[r.id])
    return done


def complete_all(
    backend: Backend, requests: Sequence[Request], on_done: Callable[[Completion], None] = lambda c: None
) -> dict[str, Completion]:
    """One Completion per request id; `on_done` is called as each arrives (progress, cost)."""
    return asyncio.run(_collect(backend, requests, on_done))
