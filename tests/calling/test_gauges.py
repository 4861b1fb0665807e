"""A server's queue read from its GET /metrics (harness/calling/backends/gauges.py, issue 42): vLLM's two gauges as
prometheus_client writes them (the library vLLM writes them with), summed over their label sets; anything else
says nothing, and a value that is no count of requests is not read."""

from __future__ import annotations

import math

import prometheus_client
import pytest

from harness.calling.backends.gauges import MOST, RUNNING, WAITING, queue_of
from harness.types import ServerQueue


def written(values: dict[str, list[float]], *, extra: bool = True) -> bytes:
    """/metrics as vLLM writes it: each gauge by model and engine (one sample per engine), among other metrics."""
    registry = prometheus_client.CollectorRegistry()
    for name, per_engine in values.items():
        gauge = prometheus_client.Gauge(name, f"{name}'s help", ["model_name", "engine"], registry=registry)
        for engine, value in enumerate(per_engine):
            gauge.labels("m", str(engine)).set(value)
    if extra:  # what surrounds them: a histogram, a counter, and vLLM's waiting-by-reason gauge (not to be added)
        prometheus_client.Histogram("vllm:e2e_request_latency_seconds", "h", registry=registry).observe(0.4)
        prometheus_client.Counter("vllm:request_success", "c", registry=registry).inc(7)
        reason = prometheus_client.Gauge(f"{WAITING}_by_reason", "r", ["reason"], registry=registry)
        reason.labels("capacity").set(50)
    return prometheus_client.generate_latest(registry)


def test_the_two_gauges_are_read_and_summed_over_engines() -> None:
    assert queue_of(written({RUNNING: [12, 30], WAITING: [0, 5]})) == ServerQueue(42, 5)
    assert queue_of(written({RUNNING: [128], WAITING: [0]}, extra=False)) == ServerQueue(128, 0)
    # Only the two gauges' lines are read: another metric's line that no parser reads does not silence them
    assert queue_of(written({RUNNING: [3], WAITING: [1]}) + b"vllm:other{engine= 1 2 3\n") == ServerQueue(3, 1)


@pytest.mark.parametrize(
    "body",
    [
        written({RUNNING: [3]}),  # one gauge only
        written({WAITING: [3]}),
        b"",
        b"404: Not Found",
        b"<html><body>metrics</body></html>",
        # llama.cpp's own gauges (llama-server --metrics): another server's words, not read as vLLM's
        b"# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing 4\n",
        f"{RUNNING} 3\n{WAITING} not-a-number\n".encode(),
        f"{RUNNING} {'9' * 400}\n{WAITING} 0\n".encode(),  # past any float: the parser's int overflows
        f'{RUNNING}{{model="m 3\n{WAITING} 0\n'.encode(),  # a label never closed
        b"\xff\xfe" + written({RUNNING: [3], WAITING: [1]}),  # not UTF-8
    ],
)
def test_anything_else_says_nothing(body: bytes) -> None:
    assert queue_of(body) is None


@pytest.mark.parametrize("bad", [-1.0, 2.5, math.nan, math.inf, MOST + 1.0])
def test_a_value_that_is_no_count_of_requests_is_not_read(bad: float) -> None:
    assert queue_of(written({RUNNING: [bad], WAITING: [0]})) is None
    assert queue_of(written({RUNNING: [4], WAITING: [bad]})) is None
    assert queue_of(written({RUNNING: [MOST], WAITING: [0]})) == ServerQueue(MOST, 0)  # the bound itself is read
