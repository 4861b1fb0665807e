"""Benchmark: API throughput against the local fake server with 100 ms latency per request.

    python tests/bench/bench_api.py [--n 2000] [--latency 0.1] [--levels 1,8,32,64] [--n-sequential 100]

For each concurrency c: N requests through the real path (OpenAIBackend over the openai SDK, dispatch with
its retry policy, the SQLite cache committing every answer), throughput as a fraction of the ideal
c / latency, and the harness's CPU time per request. The server runs in its own process, so its CPU
time is not counted. Concurrency 1 uses fewer requests (at 100 ms each, 2,000 would take 200 s).
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from harness.calling.backends.openai import OpenAIBackend  # noqa: E402
from harness.calling.cache import ResponseCache  # noqa: E402
from harness.calling.dispatch import complete_all  # noqa: E402
from harness.calling.options import DispatchOptions, DispatchStats  # noqa: E402
from harness.types import Request  # noqa: E402

# About the size of a rendered C-STS prompt with a few shots (made-up text).
FILLER = "Sentence 1: a small girl paints a wooden fence near the river. " * 8


def start_server(latency: float) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "fake_server.py"), "--latency", str(latency)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().split()
    if line[:1] != ["port"]:
        proc.kill()
        raise SystemExit(f"fake server did not start: {line}")
    return proc, f"http://127.0.0.1:{line[1]}/v1"


def measure(url: str, concurrency: int, n: int, cache_dir: Path) -> dict[str, float]:
    requests = [Request(str(i), f"{FILLER} c={concurrency} {cache_dir.name} query {i}. Output:") for i in range(n)]
    backend = OpenAIBackend("bench-model", "EMPTY", [url])
    cache = ResponseCache(cache_dir / f"c{concurrency}.sqlite")
    stats = DispatchStats()
    cpu0, t0 = time.process_time(), time.perf_counter()
    done = complete_all(backend, requests, options=DispatchOptions(concurrency=concurrency, cache=cache), stats=stats)
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    cache.close()
    assert len(done) == n and stats.errors == 0 and len(ResponseCache(cache_dir / f"c{concurrency}.sqlite")) == n
    return {"n": n, "wall": wall, "rate": n / wall, "cpu_ms": 1000 * cpu / n}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=2000)
    p.add_argument("--n-sequential", type=int, default=100, help="requests at concurrency 1")
    p.add_argument("--latency", type=float, default=0.1)
    p.add_argument("--levels", default="1,8,32,64")
    a = p.parse_args()
    proc, url = start_server(a.latency)
    print(f"python {platform.python_version()}, {os.cpu_count()} cores; server: separate process, {url}")
    print(f"latency {a.latency * 1000:.0f} ms per request; cache on (one commit per answer); SDK openai")
    print(f"{'conc':>5} {'requests':>8} {'wall s':>8} {'req/s':>8} {'ideal':>8} {'of ideal':>8} {'cpu ms/req':>10}")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            sequential = None
            for c in (int(x) for x in a.levels.split(",")):
                r = measure(url, c, a.n_sequential if c == 1 else a.n, Path(tmp))
                ideal = c / a.latency
                sequential = r["rate"] if c == 1 else sequential
                print(
                    f"{c:>5} {r['n']:>8.0f} {r['wall']:>8.2f} {r['rate']:>8.1f} {ideal:>8.1f} "
                    f"{100 * r['rate'] / ideal:>7.1f}% {r['cpu_ms']:>10.2f}",
                    flush=True,
                )
                if c == 32 and sequential:
                    print(f"      concurrency 32 vs sequential (concurrency 1): {r['rate'] / sequential:.1f}x")
    finally:
        proc.kill()
        proc.wait()


if __name__ == "__main__":
    main()
