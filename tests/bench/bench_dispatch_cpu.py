"""Dispatch's and the HTTP backend's own CPU per request, no network (not collected by pytest).

    python tests/bench/bench_dispatch_cpu.py [--n 20000] [--repeats 3]

Two lines a repeat, the two parts of tests/bench/bench_vs_lmeval.py's CPU per request that are ours, apart from
aiohttp and the kernel (that benchmark's noise, +-10 % on a shared machine, hides savings of a few microseconds):

- dispatch: what `complete_all` itself costs a request (the limiter, the attempt and its retry policy, the
  response cache in a fresh file, redaction) with a backend that answers at once: harness/calling/dispatch.py,
  attempts.py, limiter.py, cache.py. Process CPU time around `complete_all`, 128 in flight.
- send: what the OpenAI backend's `send` costs a request (the body, its encoding in the SDK's key order, the
  route, error mapping, reading the reply into a Completion, redaction) over a Link whose `request` returns a
  canned Chat Completions reply at once: harness/calling/backends/provider.py, transport.py, openai.py, reading.py.
  Process CPU time around the sends, one after another.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from multidict import CIMultiDict, CIMultiDictProxy

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harness.calling.backends.openai import OpenAIBackend
from harness.calling.backends.transport import Link
from harness.calling.cache import ResponseCache
from harness.calling.dispatch import complete_all
from harness.calling.options import DispatchOptions, DispatchStats
from harness.types import Completion, Request
from tests.stub_backend import StubBackend


class Instant(StubBackend):
    """Answers every request on the next turn of the event loop."""

    name = "instant"

    async def send(self, request: Request) -> Completion:
        await asyncio.sleep(0)
        return Completion(request.id, "3")


REPLY = json.dumps(
    {"id": "x", "object": "chat.completion", "created": 1, "model": "bench-model", "choices": [{"index": 0,
     "message": {"role": "assistant", "content": "3"}, "finish_reason": "stop"}],
     "usage": {"prompt_tokens": 150, "completion_tokens": 1, "total_tokens": 151}}
).encode()  # fmt: skip
HEADERS = CIMultiDictProxy(CIMultiDict({"Content-Type": "application/json", "Content-Length": str(len(REPLY))}))


class Canned(Link):
    """Answers every request at once with REPLY: no socket, no aiohttp."""

    async def request(self, *args: Any, **kwargs: Any) -> tuple[int, Mapping[str, str], bytes]:
        return 200, HEADERS, REPLY


def send_cpu(requests: list[Request]) -> float:
    """CPU seconds of OpenAIBackend.send over every request (its template captured before the clock starts)."""
    backend = OpenAIBackend("bench-model", "EMPTY", ["http://127.0.0.1:9/v1"], chat=True)
    for route in backend.routes:
        route.link = Canned(route.link.base_url)

    async def sends() -> float:
        await backend.send(requests[0])
        cpu = time.process_time()
        for r in requests:
            await backend.send(r)
        return time.process_time() - cpu

    return asyncio.run(sends())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--n", type=int, default=20000)
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args()
    requests = [Request(str(i), f"Rate the two sentences of item {i}. " * 20) for i in range(a.n)]
    for _ in range(a.repeats):
        with tempfile.TemporaryDirectory(prefix="bench-dispatch-") as tmp:
            cache = ResponseCache(Path(tmp) / "responses.sqlite")
            cpu = time.process_time()
            complete_all(
                Instant(), requests, options=DispatchOptions(concurrency=128, cache=cache), stats=DispatchStats()
            )
            cpu = time.process_time() - cpu
            cache.close()
        print(f"dispatch CPU per request: {1e6 * cpu / a.n:.1f} us ({a.n} requests, 128 in flight)", flush=True)
        cpu = send_cpu(requests)
        print(f"send CPU per request: {1e6 * cpu / a.n:.1f} us ({a.n} requests, OpenAI chat, canned reply)", flush=True)


if __name__ == "__main__":
    main()
