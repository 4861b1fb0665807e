"""What a server says it computes at once (llama.cpp's GET /props `total_slots`, issue 42), read over HTTP by the
OpenAI backend (harness/calling/backends/transport.py `Route.slots`) and used by dispatch's limiter: a run against a
server that states 2 slots never has more than those and one more in flight; a server that states nothing, or
something that is no count of slots, is watched instead (tests/calling/test_dispatch_slots.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from harness.calling.backends.openai import OpenAIBackend
from harness.calling.dispatch import complete_all
from harness.calling.options import DispatchOptions, DispatchStats
from harness.types import Request
from tests.fake_server import FakeServer


def lim(stats: DispatchStats) -> dict[str, Any]:
    assert stats.limiter is not None
    return stats.limiter


def test_a_run_keeps_to_the_slots_the_server_states() -> None:
    with FakeServer(latency=0.02, slots=2, props=2) as server:
        stats = DispatchStats()
        requests = [Request(str(i), f"Sentence 1: item {i}. Output:") for i in range(40)]
        backend = OpenAIBackend("m", "sk-test", [server.openai_url])
        done = complete_all(backend, requests, options=DispatchOptions(progress=False), stats=stats)
        assert stats.errors == 0 and len(done) == 40
        assert lim(stats)["server_slots"] == 2 and lim(stats)["ceiling"] == 3
        assert server.max_in_flight <= 3  # 2 computed, 1 waiting: not 8 (slow start), not 128
        assert server.slots is not None and server.slots.max_waiting <= 1


@pytest.mark.parametrize(
    ("props", "read"),
    [(4, 4), (None, None), ("4", None), (0, None), (-3, None), (True, None), (10**9, None), (2.5, None), ([4], None)],
)
def test_only_a_plain_count_of_slots_is_read(props: object, read: int | None) -> None:
    with FakeServer(props=props) as server:
        backend = OpenAIBackend("m", "sk-test", [server.openai_url, server.openai_url])

        async def ask() -> int | None:
            try:
                return await backend.capacity()
            finally:
                await backend.aclose()

        # Two --base-url servers: the slots of both (dispatch spreads requests over them).
        assert asyncio.run(ask()) == (None if read is None else 2 * read)


def test_a_providers_own_api_is_not_asked() -> None:
    backend = OpenAIBackend("m", "sk-test")  # no --base-url: nothing is sent anywhere

    async def ask() -> int | None:
        try:
            return await backend.capacity()
        finally:
            await backend.aclose()

    assert asyncio.run(ask()) is None
