"""One run of our dispatch for tests/bench/bench_vs_lmeval.py, in a process of its own (not collected by pytest).

    python tests/bench/ours_driver.py '{"url": ..., "prompts": ..., "concurrency": 64, "backend": "openai"}'

Through the stable entry points, as tests/bench/bench_api.py does: `complete_all` with an OpenAIBackend (chat, as
lm-eval's local-chat-completions, so both post to /v1/chat/completions) or an AnthropicBackend (/v1/messages),
the response cache on in a fresh file, DispatchOptions(concurrency=c) or, with "concurrency" null, the default
DispatchOptions (the rate-limit runs: no tuning). Wall and process CPU time (all threads) are measured around
`complete_all` only. Prints one JSON line.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harness.calling.backends.anthropic import AnthropicBackend
from harness.calling.backends.openai import OpenAIBackend
from harness.calling.cache import ResponseCache
from harness.calling.dispatch import complete_all
from harness.calling.options import DispatchOptions, DispatchStats
from harness.types import Request


def backend_for(kind: str, url: str) -> OpenAIBackend | AnthropicBackend:
    """url: the server's OpenAI base URL (http://127.0.0.1:PORT/v1)."""
    if kind == "anthropic":
        return AnthropicBackend("bench-model", "EMPTY", [url.removesuffix("/v1")])
    return OpenAIBackend("bench-model", "EMPTY", [url], chat=True)


def main() -> None:
    spec: dict[str, Any] = json.loads(sys.argv[1])
    prompts: list[str] = json.loads(Path(spec["prompts"]).read_text())
    requests = [Request(str(i), p) for i, p in enumerate(prompts)]
    backend = backend_for(spec.get("backend", "openai"), spec["url"])
    cache = ResponseCache(Path(spec["cache_dir"]) / "responses.sqlite")
    c = spec.get("concurrency")
    options = DispatchOptions(cache=cache) if c is None else DispatchOptions(concurrency=c, cache=cache)
    stats = DispatchStats()
    cpu0, t0 = time.process_time(), time.perf_counter()
    done = complete_all(backend, requests, options=options, stats=stats)
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    cache.close()
    answered = sum(1 for r in requests if r.id in done and done[r.id].error is None and done[r.id].text)
    error = "; ".join(stats.first_errors[:2]) or None
    result = {"n": len(requests), "answered": answered, "wall": wall, "cpu": cpu, "error": error}
    print(
        json.dumps(
            result
            | {
                "attempts": stats.attempts,
                "retries": stats.retries,
                "concurrency": options.concurrency,
                "limiter": stats.limiter,
            }
        )
    )


if __name__ == "__main__":
    main()
