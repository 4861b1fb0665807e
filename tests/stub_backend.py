"""The parts of a RemoteBackend that dispatch tests and benchmarks do not look at, written once: no cache
identity, a body of the prompt alone, one output token, nothing to close. A subclass gives `send` (and its name)."""

from __future__ import annotations

from typing import Any

from harness.calling.backends.base import RemoteBackend
from harness.types import Request


class StubBackend(RemoteBackend):
    name, model, chat, endpoint = "stub", "m", True, "/v1/chat/completions"

    def describe(self) -> dict[str, object]:
        return {}

    def body(self, request: Request) -> dict[str, Any]:
        return {"prompt": request.prompt}

    def output_budget(self, request: Request) -> int:
        return 1

    async def aclose(self) -> None:
        pass
