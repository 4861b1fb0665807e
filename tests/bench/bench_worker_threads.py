"""In-process SmolLM2 answers beside other torch processes, as pytest-xdist workers run them (not collected).

    python tests/bench/bench_worker_threads.py [--n 8] [--others 3]

What tests/conftest.py's OMP_NUM_THREADS share guards against: under `-n auto` (two workers a core) each worker's
torch took every core, so `--others` busy torch processes beside one generating worker oversubscribe the CPU.
Three lines, side by side in one run: the worker alone with torch's default threads; the same beside `--others`
processes on the default threads; the same with every process on cores // (others + 1) threads (the conftest's
share). Each line: the threads, the seconds for `--n` answers (tests/calling/test_real_server.py's in-process
check: the hf backend, one prompt a batch, chat template).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OTHER = "import torch\nx = torch.randn(64, 64)\nwhile True:\n    torch.relu(x @ x) + 1\n"  # a busy worker's torch


def generate(n: int) -> None:
    """The child: load SmolLM2, answer n prompts in process, print threads and seconds."""
    import torch

    from harness.calling.backends.hf import HFBackend
    from harness.config.settings import LocalOptions
    from harness.types import Request
    from tests.real_model import MODEL

    backend = HFBackend(MODEL, LocalOptions(batch_size=1), progress=False)
    backend.load()
    backend.chat = True
    prompts = [
        f"Input: Sentence 1: A man is cutting onion number {i}. Sentence 2: A man cuts {i} onions. Output: "
        for i in range(n)
    ]

    async def answers() -> int:
        return len([c async for c in backend.complete([Request(str(i), p) for i, p in enumerate(prompts)])])

    started = time.perf_counter()
    done = asyncio.run(answers())
    print(f"{torch.get_num_threads()} {time.perf_counter() - started:.1f} {done}")


def measure(n: int, others: int, threads: int | None) -> str:
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    if threads is not None:
        env["OMP_NUM_THREADS"] = str(threads)
    busy = [subprocess.Popen([sys.executable, "-c", OTHER], env=env) for _ in range(others)]
    try:
        out = subprocess.run(
            [sys.executable, __file__, "--child", str(n)], env=env, capture_output=True, text=True, check=True
        ).stdout.split()
    finally:
        for p in busy:
            p.kill()
            p.wait()
    return f"torch threads {out[0]:>2}, {others} other busy processes: {out[2]} answers in {out[1]} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=8)
    parser.add_argument("--others", type=int, default=3, help="other busy workers (-n auto on two cores: 3)")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        generate(args.child)
        return
    os.environ.pop("OMP_NUM_THREADS", None)
    cores = len(os.sched_getaffinity(0))
    print(f"{cores} cores; {args.n} in-process SmolLM2 answers")
    print("alone, default threads:   " + measure(args.n, 0, None), flush=True)
    print("beside, default threads:  " + measure(args.n, args.others, None), flush=True)
    share = max(1, cores // (args.others + 1))
    print(f"beside, {share} thread(s) each: " + measure(args.n, args.others, share), flush=True)


if __name__ == "__main__":
    main()
