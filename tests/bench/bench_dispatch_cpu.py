"""Dispatch's own CPU per request: a backend that answers at once, no HTTP (not collected by pytest).

    python tests/bench/bench_dispatch_cpu.py [--n 20000] [--repeats 3]

What `complete_all` itself costs a request (the limiter, the attempt and its retry policy, the response cache in a
fresh file, redaction), apart from any backend: the part of tests/bench/bench_vs_lmeval.py's CPU per request that
harness/calling/dispatch.py, attempts.py and limiter.py own. Process CPU time around `complete_all`, 128 in flight.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

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


if __name__ == "__main__":
    main()
