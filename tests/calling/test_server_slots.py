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
from harness.types import Request, ServerQueue
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


def test_a_run_against_a_server_that_says_its_queue_reads_it_while_requests_are_out() -> None:
    """vLLM's GET /metrics (harness/calling/server_queue.py): asked once before the first request and every
    QUEUE_POLL seconds after; a server whose requests wait while its two slots stay busy is read as full, and the
    window cut to those two and two more (a queue as deep: server_queue.py QUEUED)."""
    with FakeServer(latency=0.05, slots=2, metrics=True) as server:
        stats = DispatchStats()
        requests = [Request(str(i), f"Sentence 1: item {i}. Output:") for i in range(200)]
        backend = OpenAIBackend("m", "sk-test", [server.openai_url])
        done = complete_all(backend, requests, options=DispatchOptions(progress=False), stats=stats)
        assert stats.errors == 0 and len(done) == 200 and stats.attempts == 200
        limiter = lim(stats)
        assert limiter["queue_readings"] == server.metrics_asked >= 3  # 200 x 0.05 s over 2 slots: 5 s and more
        assert limiter["server_full"] >= 1 and limiter["lowest_window"] <= 4 and limiter["final_window"] == 4
        assert limiter["server_slots"] is None  # no /props: the slots are not stated, the queue is


@pytest.mark.parametrize(
    "metrics",
    [
        False,
        "garbage",
        "vllm:num_requests_running 3\n",
        f"vllm:num_requests_running {'9' * 400}\nvllm:num_requests_waiting 0\n",  # absurd: the run goes on
    ],
)
def test_a_server_whose_metrics_say_nothing_of_its_queue_is_asked_once(metrics: bool | str) -> None:
    with FakeServer(latency=0.01, metrics=metrics) as server:
        stats = DispatchStats()
        requests = [Request(str(i), f"Sentence 1: item {i}. Output:") for i in range(40)]
        backend = OpenAIBackend("m", "sk-test", [server.openai_url])
        done = complete_all(backend, requests, options=DispatchOptions(progress=False), stats=stats)
        assert len(done) == 40 and stats.errors == 0
        assert server.metrics_asked == 1 and lim(stats)["queue_readings"] == 0


def test_the_queues_of_several_servers_are_summed_and_one_that_says_nothing_silences_them() -> None:
    said = 'vllm:num_requests_running{engine="0"} 3.0\nvllm:num_requests_waiting{engine="0"} 1.0\n'
    with FakeServer(metrics=said) as says, FakeServer(metrics=False) as silent:

        async def ask(*urls: str) -> ServerQueue | None:
            backend = OpenAIBackend("m", "sk-test", list(urls))
            try:
                return await backend.queue()
            finally:
                await backend.aclose()

        assert asyncio.run(ask(says.openai_url)) == ServerQueue(3, 1)
        assert asyncio.run(ask(says.openai_url, says.openai_url)) == ServerQueue(6, 2)
        assert asyncio.run(ask(says.openai_url, silent.openai_url)) is None
        backend = OpenAIBackend("m", "sk-test")  # a provider's own API (no --base-url): not asked
        assert asyncio.run(backend.queue()) is None
