"""The one backend interface. Backends are batch-shaped, async, and know nothing of C-STS."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Protocol

from harness.types import Completion, Request


class Backend(Protocol):
    """Turns requests into completions, in any order; one Completion per Request id."""

    name: str
    model: str

    def complete(self, requests: Sequence[Request]) -> AsyncIterator[Completion]:
        """Yield a Completion for every request (an `error` Completion when it failed for good)."""
        ...

    def describe(self) -> dict[str, object]:
        """What was sent and how (decoding parameters, endpoint), for config.json. No secrets."""
        ...
