"""The floor for tests/bench/bench_vs_lmeval.py: plain aiohttp posting prebuilt chat bodies (not collected by pytest).

    python tests/bench/aiohttp_driver.py '{"url": ..., "prompts": ..., "concurrency": 64}'

No cache, no retries, no rate limiter, no SDK: one ClientSession (pool as large as the concurrency), a semaphore,
every body encoded before the clock starts, each reply read and decoded as JSON. It runs on the event loop ours runs
on (uvloop when installed), so "ours minus this" is what the harness itself adds per request on this machine.
Prints one JSON line like the other drivers.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp


async def post_all(url: str, bodies: list[bytes], concurrency: int) -> int:
    answered = 0
    limit = asyncio.Semaphore(concurrency)
    headers = {"Content-Type": "application/json", "Authorization": "Bearer EMPTY"}
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def one(body: bytes) -> None:
            nonlocal answered
            async with limit, session.post(url, data=body, headers=headers) as response:
                reply = json.loads(await response.read())
                answered += bool(response.status == 200 and reply["choices"][0]["message"]["content"])

        await asyncio.gather(*(one(b) for b in bodies))
    return answered


def main() -> None:
    spec: dict[str, Any] = json.loads(sys.argv[1])
    prompts: list[str] = json.loads(Path(spec["prompts"]).read_text())
    bodies = [
        json.dumps({"model": "bench-model", "messages": [{"role": "user", "content": p}], "max_tokens": 16}).encode()
        for p in prompts
    ]
    url = spec["url"].rstrip("/") + "/chat/completions"
    factory: Callable[[], asyncio.AbstractEventLoop] | None = None
    with contextlib.suppress(ImportError):
        import uvloop

        factory = uvloop.new_event_loop
    cpu0, t0 = time.process_time(), time.perf_counter()
    with asyncio.Runner(loop_factory=factory) as runner:
        answered = runner.run(post_all(url, bodies, spec["concurrency"]))
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    print(json.dumps({"n": len(prompts), "answered": answered, "wall": wall, "cpu": cpu, "error": None}))


if __name__ == "__main__":
    main()
