"""Several base URLs behind one backend: each attempt goes to the least busy one (round-robin among equals)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Generic, TypeVar

C = TypeVar("C")


class ClientPool(Generic[C]):
    """One SDK client per base URL; each attempt leases the least busy one (round-robin among equals)."""

    def __init__(self, clients: Sequence[C]) -> None:
        self.clients = list(clients)
        self._in_flight = [0] * len(self.clients)
        self._turn = 0

    def lease(self) -> _Lease[C]:
        """`with pool.lease() as client`: the least busy client (round-robin among equals) for one attempt."""
        return _Lease(self)

    def take(self) -> int:
        n = len(self.clients)
        start, self._turn = self._turn, (self._turn + 1) % n
        i = start if n == 1 else min(((start + k) % n for k in range(n)), key=lambda j: self._in_flight[j])
        self._in_flight[i] += 1
        return i

    def give_back(self, i: int) -> None:
        self._in_flight[i] -= 1

    async def aclose(self) -> None:
        """Close every client (inside the event loop that used them)."""
        for c in self.clients:
            await c.close()  # type: ignore[attr-defined]


class _Lease(Generic[C]):
    """One attempt's client, given back on leaving (a class, not a generator context: it wraps every request)."""

    __slots__ = ("i", "pool")

    def __init__(self, pool: ClientPool[C]) -> None:
        self.pool, self.i = pool, -1

    def __enter__(self) -> C:
        self.i = self.pool.take()
        return self.pool.clients[self.i]

    def __exit__(self, *exc: object) -> None:
        self.pool.give_back(self.i)
