"""What a server says of its queue at GET /metrics (issue 42): vLLM's Prometheus gauges of the requests it computes
now (`vllm:num_requests_running`) and of those waiting for a place among them (`vllm:num_requests_waiting`).

vLLM states no number of slots a client could read: how many it batches (`--max-num-seqs`) is in no endpoint, and its
/metrics' `kv_cache_max_concurrency` is how many of the longest context fit its KV cache, not how many short requests
it runs. But its queue it states: while nothing waits, it computes every request it was sent, and the latency that
grows with the window is its batch's, not a queue's; once requests wait, what runs is what it serves at once. The
limiter reads that (harness/calling/server_queue.py) instead of guessing it from latencies (congestion.py).

The text is Prometheus' exposition format, read by prometheus_client's own parser; a reply from any other server (an
API's 404, llama.cpp's `llamacpp:` gauges, an HTML page) has neither gauge and says nothing. Values are summed over
their label sets (one per model and engine of a server), and read only where each is a whole number in range.
"""

from __future__ import annotations

import math

from prometheus_client.parser import text_string_to_metric_families

from harness.types import ServerQueue

RUNNING, WAITING = "vllm:num_requests_running", "vllm:num_requests_waiting"
MOST = 1_000_000  # more requests than this, running or waiting, is no count a server keeps: not read


def queue_of(body: bytes) -> ServerQueue | None:
    """The server's queue from a GET /metrics body (bounded by the caller: Link's --max-reply-mb); None unless both
    gauges are there, each a whole number from 0 to MOST."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return None
    # Only the two gauges' lines go to the parser: vLLM's /metrics holds some hundred kilobytes of histograms, asked
    # every second of a run on the server's own machine, and what is not read cannot be malformed either.
    wanted = "\n".join(line for line in text.splitlines() if any(name in line for name in (RUNNING, WAITING)))
    found: dict[str, float] = {}
    try:
        for family in text_string_to_metric_families(wanted + "\n"):
            for sample in family.samples:
                if sample.name in (RUNNING, WAITING):
                    found[sample.name] = found.get(sample.name, 0.0) + float(sample.value)
    # The parser's words for a line it cannot read; OverflowError: a count of 400 digits (an int past any float)
    except (ValueError, TypeError, KeyError, IndexError, OverflowError):
        return None
    values = [found.get(RUNNING), found.get(WAITING)]
    if any(v is None or not math.isfinite(v) or v != int(v) or not 0 <= v <= MOST for v in values):
        return None
    running, waiting = (int(v) for v in values if v is not None)
    return ServerQueue(running, waiting)
