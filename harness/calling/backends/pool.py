"""Several base URLs behind one backend: each attempt goes to the least busy one (round-robin among equals)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Generic, TypeVar

C = TypeVar("C")


class ClientPool(Generic[C]):
    """One SDK client per base URL; each attempt leases the least busy one (round-robin among equals)."""

    def __init__(self, clients: Sequence[C]) -> None:
        self.clients = list(clients)
        self._in_flight = [0] * len(self.clients)
        self._turn = 0

    @contextlib.contextmanager
    def lease(self) -> Iterator[C]:
        n = len(self.clients)
        start, self._turn = self._turn, (self._turn + 1) % n
        i = min(((start + k) % n for k in range(n)), key=lambda j: self._in_flight[j])
        self._in_flight[i] += 1
        try:
            yield self.clients[i]
        finally:
            self._in_flight[i] -= 1

    async def aclose(self) -> None:
        """Close every client (inside the event loop that used them)."""
        for c in self.clients:
            await c.close()  # type: ignore[attr-defined]
