"""Benchmark (issue 42): the watched window against servers whose speed scatters or drifts, over many seeds, on the
virtual clock (tests/virtual_clock.py: exact and the same on any machine, so no repeats or quiet machine needed).

    python tests/bench/bench_window_seeds.py [--seeds 40] [--n 600] [--batch-n 2834]

Two tables. (1) A flat server (four slots of 2.5 s a request, as llama.cpp's on SmolLM2-135M here), each request's
time scattered by `spread` either way and the server `speedup` faster by the 600th request (slower where negative):
how many seeds end with the window above 3 x QUEUE_K x 4 (the bound of tests/calling/test_dispatch_slots.py), the
final windows' median and highest, the latest answer after the first half and the answers a second against what
four slots give. (2) A server that batches all it holds (latency a + b x load, each request's time scattered by a
tenth), as in test_dispatch_slots.py's batching cases: answers a second against the best fixed level (the mean of
four seeds for each level of a sweep within --timeout's share), as the median, the tenth worst and the worst, and
how many seeds fall under 95 %. The dispatch is the harness's own, with its defaults (--concurrency 128).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pytest

from harness.calling.congestion import QUEUE_K, TIMEOUT_SHARE
from tests.calling.test_dispatch_limits import on_virtual_clock
from tests.calling.test_dispatch_slots import BATCHING, drifting, fixed_rate, lim, run
from tests.fake_slots import SlotBackend

FLAT = [(0.1, 0.0), (0.2, 0.0), (0.3, 0.0), (0.1, 0.4), (0.2, 0.4), (0.1, 0.6), (0.1, -0.4)]  # (spread, speedup)


def virtual(backend: SlotBackend, n: int, timeout: float = 120.0) -> dict[str, float]:
    patch = pytest.MonkeyPatch()
    on_virtual_clock(patch)
    try:
        stats = run(backend, n=n, timeout=timeout)
    finally:
        patch.undo()
    assert backend.first_sent is not None
    return {
        "final": lim(stats)["final_window"],
        "late": max(backend.latencies[n // 2 :]),
        "rate": n / (backend.last_answer - backend.first_sent),
        "retries": stats.retries,
    }


def scattered(a: float, b: float, seed: int, spread: float = 0.1) -> SlotBackend:
    draw = random.Random(seed)
    service: Callable[[int], float] = lambda busy: (a + b * busy) * draw.uniform(1 - spread, 1 + spread)  # noqa: E731
    return SlotBackend(10_000, service)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=40)
    p.add_argument("--n", type=int, default=600, help="requests a run, flat server")
    p.add_argument("--batch-n", type=int, default=0, help="requests a run, batching servers (0: the tests' own)")
    a = p.parse_args()
    if a.seeds < 1 or a.n < 2 or a.batch_n < 0 or a.batch_n == 1:
        p.error("--seeds must be at least 1, --n at least 2 and --batch-n 0 or at least 2")
    bound = 3 * QUEUE_K * 4
    print(f"Flat server, 4 slots x 2.5 s, {a.n} requests, seeds 0-{a.seeds - 1}; bound {bound:g} in flight\n")
    print(
        "| spread | speed-up by the 600th | final window > bound | final window: median, highest | latest answer, "
        "second half (s): median, highest | answers/s over 4 slots' (median) | retries |"
    )
    print("|---|---|---|---|---|---|---|")
    for spread, speedup in FLAT:
        runs = [virtual(SlotBackend(4, drifting(seed, spread, speedup)), a.n) for seed in range(a.seeds)]
        finals, lates = [r["final"] for r in runs], [r["late"] for r in runs]
        # what four busy slots give: 4 over the mean service time, which falls linearly to 1 - speedup by the 600th
        mean_service = statistics.mean(2.5 * (1 - speedup * min(1.0, i / 600)) for i in range(a.n))
        share = statistics.median(r["rate"] for r in runs) / (4 / mean_service)
        print(
            f"| {spread:g} | {speedup:+g} | {sum(f > bound for f in finals)} / {len(runs)} | "
            f"{statistics.median(finals):.1f}, {max(finals):.1f} | {statistics.median(lates):.1f}, {max(lates):.1f} "
            f"| {share:.3f} | {sum(int(r['retries']) for r in runs)} |"
        )
    print(f"\nBatching server, latency (a + b x load) scattered by a tenth, seeds 0-{a.seeds - 1}\n")
    print("| case | best fixed (c, answers/s) | ours/best: median, tenth worst, worst | under 95 % |")
    print("|---|---|---|---|")
    for case, (base, per, timeout, n) in BATCHING.items():
        n = a.batch_n or n
        share_s = TIMEOUT_SHARE * timeout
        within = [c for c in range(1, 129) if (base + per * c) * 1.1 <= share_s]
        levels = (*within[:: max(1, len(within) // 12)], within[-1])
        means = {c: statistics.mean(fixed_rate(scattered(base, per, 900 + k), n, c) for k in range(4)) for c in levels}
        best_c = max(means, key=lambda c: means[c])
        ratios = sorted(
            virtual(scattered(base, per, seed), n, timeout)["rate"] / means[best_c] for seed in range(a.seeds)
        )
        print(
            f"| {case} | c={best_c}, {means[best_c]:.2f} | {statistics.median(ratios):.3f}, "
            f"{ratios[len(ratios) // 10]:.3f}, {ratios[0]:.3f} | {sum(r < 0.95 for r in ratios)} / {len(ratios)} |"
        )


if __name__ == "__main__":
    main()
