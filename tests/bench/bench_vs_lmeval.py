"""Benchmark (issue 12): our dispatch against lm-evaluation-harness side by side, then under a rate limit.

    python tests/bench/bench_vs_lmeval.py                                 # the full run (~10-15 min)
    python tests/bench/bench_vs_lmeval.py --n 300 --repeats 1 --rl-n 1000  # a quick check (~2 min)

Not a timed test (pytest does not collect it). Installs lm-eval[api]==0.4.13 once into a venv of its own
(tests/bench/lmeval_env.py, under ~/.cache/csts-harness/; the only download; --skip-lmeval runs ours alone).

1. Throughput: ONE fake server (tests/fake_server.py, its own process, --latency per request) and the same N
   made-up prompts (~600 characters; no C-STS text) sent at each in-flight level by (a) ours: `complete_all`
   with DispatchOptions(concurrency=c), the response cache on in a fresh file, to /v1/chat/completions, and
   (b) lm-eval's `local-chat-completions` model with num_concurrent=c (tests/bench/lmeval_driver.py), and (c)
   the floor: plain aiohttp posting the same prompts' prebuilt bodies, nothing else (tests/bench/aiohttp_driver.py).
   Each run is a fresh process; wall and process CPU time are measured around the dispatch call only (not imports or
   startup). Each (level, contender) runs --repeats times, interleaved, the order alternating. Ideal req/s is
   c / latency. Every request must be answered (the run's count and the server's count of 200s).
   A last table gives the ratios issue 33 asks for, from the same interleaved runs: ours' CPU per request over
   plain aiohttp's (target <= 1.5) and ours' requests/s over lm-eval's (target >= 0.95), medians.
2. Rate limits, served as a provider serves them: a server enforcing --rps-limit with a burst allowance of
   --rps-burst requests (a token bucket; 20 by default, as strict as a provider that "quantizes" its per-minute
   limit), and ours with the DEFAULT DispatchOptions (no tuning), --rl-n requests: goodput (answers/s over the
   run) as % of the limit and the 429s as % of the attempts the server saw; in each header mode: 429s with
   retry-after (and retry-after-ms) only, OpenAI's x-ratelimit-* headers as OpenAI documents them (per-minute
   limit, remaining, reset as "1s"/"120ms"; lagging the bucket by --header-lag seconds), the Anthropic backend
   with anthropic-ratelimit-* headers (as lagging), 429s with no header at all, and a prompt tokens-per-minute
   limit set to bind first (goodput then as % of the token limit). Then lm-eval under the request limit at
   --lmeval-rl-concurrency. The "net of burst" column subtracts the bucket's starting content. The target
   (issue 33): >= 95 % of the limit with <= 3 % of attempts answered 429, in every mode. `--against REF` runs each
   mode with that commit's code too (git archive; its own ours_driver.py), interleaved, to compare under one load.
   Per-run details go to stderr; the tables to stdout. Exit status 1 when one of ours left a request unanswered
   (or lm-eval did without a rate limit).
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.bench import lmeval_env
from tests.bench.bench_grid import checkout
from tests.bench.vs_lmeval_support import (
    Contender,
    floor,
    lmeval,
    machine,
    make_prompts,
    ours,
    run,
    server,
    spread,
    table,
    write_json,
)
from tests.fake_ratelimit import prompt_tokens

THROUGHPUT_HEADER = ["in flight", "contender", "req/s min", "req/s med", "% of ideal", "CPU ms/req min",
                     "CPU ms/req med", "answered", "server CPU ms/req med"]  # fmt: skip
LIMIT_HEADER = ["limit; headers", "contender", "backend", "in flight", "answered", "wall s", "answers/s", "goodput",
                "net of burst", "429s", "CPU ms/answer", ">= 95 %, <= 3 %"]  # fmt: skip


def note(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def throughput(a: argparse.Namespace, contenders: list[Contender], prompts: Path) -> bool:
    """Side by side at each level; prints the table; False when some request went unanswered."""
    runs: dict[tuple[int, str], list[dict[str, Any]]] = defaultdict(list)
    with server(a.latency) as srv:
        for level in a.levels:
            for r in range(a.repeats):
                for c in contenders if r % 2 == 0 else contenders[::-1]:
                    before, server_cpu = srv.stats()["served"], srv.cpu()
                    result = run(c, {"url": srv.url, "prompts": str(prompts), "concurrency": level}, a.timeout)
                    result["served"] = srv.stats()["served"] - before
                    result["server_cpu"] = srv.cpu() - server_cpu
                    runs[level, c.name].append(result)
                    note(f"  {level} in flight, {c.name}, repeat {r + 1}: {result}")
    rows, problems = [], []
    for level in a.levels:
        for c in contenders:
            results = runs[level, c.name]
            bad = [x for x in results if x.get("error") or not x["answered"] == x["served"] == x["n"]]
            good = [x for x in results if x not in bad]
            rate = spread([x["n"] / x["wall"] for x in good])
            cpu = spread([1000 * x["cpu"] / x["n"] for x in good])
            answered = f"{min(x['answered'] for x in results)}/{a.n}" + (" !" if bad else "")
            ideal = f"{100 * rate[1] * a.latency / level:.0f}%"
            server_cpu = spread([1000 * x["server_cpu"] / x["n"] for x in good])[1]
            rows.append([str(level), c.name, f"{rate[0]:.0f}", f"{rate[1]:.0f}", ideal, f"{cpu[0]:.2f}",
                         f"{cpu[1]:.2f}", answered, f"{server_cpu:.2f}"])  # fmt: skip
            problems += [f"  ! {c.name} at {level}: answered {x['answered']}/{x['n']}, the server served "
                         f"{x['served']}: {x.get('error')}" for x in bad]  # fmt: skip
    print(f"\nThroughput: {a.n} requests a run, server latency {a.latency * 1000:.0f} ms, ideal req/s = in flight / "
          f"latency; min and median of {a.repeats} repeats, interleaved")  # fmt: skip
    print(table(THROUGHPUT_HEADER, rows, "><>>>>>>>"))
    print("\n".join(problems))
    print(ratios(a, contenders, runs))
    return not problems


def ratios(
    a: argparse.Namespace, contenders: list[Contender], runs: dict[tuple[int, str], list[dict[str, Any]]]
) -> str:
    """Ours against the floor (CPU per request) and against lm-eval (requests/s), medians of the same runs."""

    def median(level: int, name: str, of: str) -> float:
        good = [x for x in runs[level, name] if not x.get("error") and x["answered"] == x["n"]]
        values = [x["n"] / x["wall"] if of == "rate" else x["cpu"] / x["n"] for x in good]
        return spread(values)[1]

    names = [c.name for c in contenders]
    lm = next((n for n in names if n.startswith("lm-eval")), None)
    rows = []
    for level in a.levels:
        cpu = median(level, "ours", "cpu") / median(level, "plain aiohttp", "cpu") if "plain aiohttp" in names else None
        rate = median(level, "ours", "rate") / median(level, lm, "rate") if lm else None
        rows.append([str(level), "-" if cpu is None else f"{cpu:.2f}", "-" if rate is None else f"{rate:.2f}"])
    head = ["in flight", "ours CPU/req over plain aiohttp's (target <= 1.5)", "ours req/s over lm-eval's (>= 0.95)"]
    return "\nRatios, medians of the runs above\n" + table(head, rows, ">>>")


def rate_limit_runs(
    a: argparse.Namespace, lm: Contender | None, prompts: Path, tokens_per_prompt: float, older: list[Contender]
) -> bool:
    """Ours with default DispatchOptions against each limit, then lm-eval; prints the table."""
    tpm = round(a.tpm_fraction * a.rps_limit * tokens_per_prompt * 60)
    tpm_burst = round(tpm / 60 * a.rps_burst / a.rps_limit)  # as long a burst as the request bucket's
    rps = ["--rps-limit", f"{a.rps_limit:g}", "--rps-burst", f"{a.rps_burst:g}"]
    tokens = [*rps, "--tpm-limit", str(tpm), "--tpm-burst", str(tpm_burst)]
    lag = ["--header-lag", f"{a.header_lag:g}"]
    modes = [
        ("requests; retry-after only", "openai", rps),
        ("requests; OpenAI headers", "openai", [*rps, "--ratelimit-headers", "openai", *lag]),
        ("requests; Anthropic headers", "anthropic", [*rps, "--ratelimit-headers", "anthropic", *lag]),
        ("requests; no header", "openai", [*rps, "--no-retry-after"]),
        ("tokens/min; OpenAI headers", "openai", [*tokens, "--ratelimit-headers", "openai", *lag]),
    ]
    mine = [ours(), *older]  # --against: the same runs with that commit's code, interleaved (the order alternating)
    cases: list[tuple[str, Contender, str, list[str], int | None]] = [
        (label, c, backend, flags, None)
        for i, (label, backend, flags) in enumerate(modes)
        for c in (mine if i % 2 == 0 else mine[::-1])
    ]
    if lm is not None:
        cases.append(("requests; retry-after only", lm, "openai", rps, a.lmeval_rl_concurrency))
    rows, problems, ok = [], [], True
    for label, contender, backend, flags, level in cases:
        with server(a.latency, flags) as srv:
            spec = {"url": srv.url, "prompts": str(prompts), "concurrency": level, "backend": backend}
            if contender is lm and a.lmeval_max_retries:
                spec["max_retries"] = a.lmeval_max_retries
            result = run(contender, spec, a.timeout)
            stats = srv.stats()
        note(f"  {label}, {contender.name}: {result}")
        served, limits, wall = stats["served"], stats["rate_limit"], result.get("wall") or math.nan
        attempts = limits["admitted"] + limits["rate_limited"] + limits["too_large"]
        if "--tpm-limit" in flags:  # the token bucket binds: prompt tokens/s
            done, rate, burst = limits["admitted_prompt_tokens"], tpm / 60, tpm_burst
        else:
            done, rate, burst = served, a.rps_limit, a.rps_burst
        goodput, net = done / wall / rate, max(0, done - burst) / wall / rate
        in_flight = f"default ({result['concurrency']})" if level is None and "concurrency" in result else str(level)
        cpu = f"{1000 * result['cpu'] / result['answered']:.2f}" if result["answered"] else "-"
        failed = bool(result.get("error")) or result["answered"] != result["n"]
        answered = f"{result['answered']}/{result['n']}" + (" !" if failed else "")
        rates = ["-", "-", "-"] if not result["answered"] else [f"{served / wall:.0f}", f"{100 * goodput:.0f}%",
                                                               f"{100 * net:.0f}%"]  # fmt: skip
        refused = limits["rate_limited"] / max(1, attempts)
        met = "met" if not failed and net >= 0.95 and refused <= 0.03 else "missed"
        rows.append([label, contender.name, backend, in_flight, answered, f"{wall:.1f}", *rates,
                     f"{100 * refused:.1f}%", cpu, met if contender is not lm else "-"])  # fmt: skip
        if failed:
            problems.append(f"  ! {contender.name}, {label}: answered {result['answered']}/{result['n']} (server: "
                            f"{served} served, {limits['rate_limited']} 429s): {result.get('error')}")  # fmt: skip
            ok = ok and contender.name != "ours"  # lm-eval (or older code) giving up is a finding, not a broken run
    print(f"\nRate limits: {a.rl_n} requests a run, latency {a.latency * 1000:.0f} ms; request limit "
          f"{a.rps_limit:g}/s, bursts of {a.rps_burst:g}; token limit {tpm} prompt tokens/min, bursts of {tpm_burst} "
          f"({a.tpm_fraction:g} x the request limit at {tokens_per_prompt:.0f} tokens a prompt, ceil(bytes/4)); "
          f"headers lag the buckets by up to {a.header_lag:g} s.\ngoodput: answers/s (prompt tokens/s under the "
          "token limit) over the run as % of the limit; net of burst: the same less the bucket's starting content;"
          "\n429s: % of the attempts the server saw answered 429. lm-eval's default "
          "num_concurrent is 1 (sequential: never near the limit); it runs at --lmeval-rl-concurrency, with its "
          "own retries (tenacity, max_retries 3, exponential 1-10 s, no retry-after)")  # fmt: skip
    print(table(LIMIT_HEADER, rows, "<<<>>>>>>>><"))
    print("\n".join(problems))
    return ok


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--n", type=int, default=1500, help="requests per throughput run")
    p.add_argument("--levels", default="8,32,64,128", help="requests in flight, comma-separated")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--latency", type=float, default=0.1, help="the server's seconds per request")
    p.add_argument("--rl-n", type=int, default=3000, help="requests per rate-limit run")
    p.add_argument("--rps-limit", type=float, default=200)
    p.add_argument("--rps-burst", type=float, default=20, help="the request bucket's capacity (a provider's burst)")
    p.add_argument("--header-lag", type=float, default=0.5, help="seconds the rate-limit headers lag the buckets")
    p.add_argument("--tpm-fraction", type=float, default=0.5, help="token limit, as a fraction of the request limit")
    p.add_argument("--lmeval-rl-concurrency", type=int, default=128, help="lm-eval's num_concurrent under the limit")
    p.add_argument("--lmeval-max-retries", type=int, help="lm-eval's max_retries under the limit (default: its own)")
    p.add_argument("--timeout", type=float, default=600, help="seconds per run before it is killed")
    p.add_argument("--skip-lmeval", action="store_true", help="ours alone (no lm-eval venv)")
    p.add_argument("--skip-floor", action="store_true", help="leave out plain aiohttp (the HTTP library's own cost)")
    p.add_argument("--skip-throughput", action="store_true")
    p.add_argument("--skip-ratelimit", action="store_true")
    p.add_argument("--against", metavar="REF", help="rate-limit runs also with this git ref's code, interleaved")
    a = p.parse_args()
    a.levels = [int(x) for x in a.levels.split(",")]
    lm, versions = None, None
    if not a.skip_lmeval:
        python = lmeval_env.ensure_venv()
        versions = lmeval_env.versions(python)
        lm = lmeval(python, versions["lm_eval"])
    print("\n".join(machine(versions)))
    contenders = [ours()] + ([lm] if lm else []) + ([] if a.skip_floor else [floor()])
    ok = True
    with tempfile.TemporaryDirectory(prefix="bench-vs-lmeval-") as tmp:
        if not a.skip_throughput:
            ok = throughput(a, contenders, write_json(Path(tmp), "prompts.json", make_prompts(a.n))) and ok
        if not a.skip_ratelimit:
            prompts = make_prompts(a.rl_n, seed=1)
            tokens = sum(prompt_tokens(x) for x in prompts) / len(prompts)
            older = []
            if a.against:  # that commit's files (git archive), its own ours_driver.py, this checkout's fake server
                code = checkout(a.against, Path(tempfile.mkdtemp(dir=tmp, prefix="against-")))
                older = [Contender(f"ours {a.against}", Path(sys.executable), code / "tests" / "bench" /
                                   "ours_driver.py", {"PYTHONPATH": str(code)})]  # fmt: skip
            ok = rate_limit_runs(a, lm, write_json(Path(tmp), "rl-prompts.json", prompts), tokens, older) and ok
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
