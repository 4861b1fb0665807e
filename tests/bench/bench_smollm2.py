"""SmolLM2-135M-Instruct on the same STS-B items: in-process (hf backend) and through `transformers serve`.

Prints one row per setting: queries/s, invalid %, reason codes (where the build records them), Spearman of the
parsed answers and of the expected score, beside the offline baselines on the same items. Every run goes through
the harness itself (`run_eval.py` main) with the cache off, so each number is a fresh measurement.

    python tests/bench/bench_smollm2.py                    # 200 items, every setting (tens of minutes on 2 cores)
    python tests/bench/bench_smollm2.py --n 50 --only hf-raw,hf-chat
    python tests/bench/bench_smollm2.py --out bench.json   # also write the rows as JSON

Settings: hf-raw, hf-chat (in-process, raw text / chat template, `--scoring expected` so parsed and expected
come from the same answers), serve-chat and serve-raw (the OpenAI backend against `transformers serve`, one
server; serve-raw needs the harness's --no-chat, else it is skipped and says so). The machine's load average
is printed at the start and end of each setting: on a shared machine the rates move with it.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from harness.calling.backends import local_models  # noqa: E402
from harness.cli.main import main  # noqa: E402
from harness.cli.options import run_parser  # noqa: E402
from tests.servers.transformers_serve import transformers_serve  # noqa: E402

SETTINGS = ("overlap", "random", "hf-raw", "hf-chat", "serve-chat", "serve-raw")


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def run(args: list[str], results: Path, run_id: str) -> tuple[dict[str, Any], float, int]:
    """One harness run: (metrics.json, wall seconds, exit code); its printed lines are kept out of the table."""
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        rc = main([*args, "--results-dir", str(results), "--run-id", run_id, "--no-progress", "--no-cache"])
    wall = time.perf_counter() - start
    if rc == 130:  # Ctrl-C inside the run: the harness caught it; stop the bench too
        raise KeyboardInterrupt
    path = results / run_id / "metrics.json"
    return (json.loads(path.read_text()) if path.is_file() else {}), wall, rc


def row(name: str, m: dict[str, Any], wall: float, setup: float, n: int, before: str) -> dict[str, Any]:
    busy = max(wall - setup, 1e-9)
    return {
        "setting": name,
        "n": m.get("n"),
        "queries_per_s": round(n / busy, 2),
        "wall_s": round(wall, 1),
        "setup_s": round(setup, 1),
        "invalid_pct": m.get("invalid_pct"),
        "reasons": m.get("reasons", "n/a: this build records no reason codes"),
        "spearman": m.get("spearman"),
        "spearman_valid": m.get("spearman_valid"),
        "spearman_expected": m.get("spearman_expected"),
        "expected_mass_mean": m.get("expected_mass_mean"),
        "input_tokens": m.get("usage", {}).get("input_tokens"),
        "load_before": before,
        "load_after": load(),
    }


def model_load_seconds() -> float:
    """How long the hf backend takes to load the converted SmolLM2 folder (subtracted from in-process rates)."""
    from harness.calling.backends.hf import HFBackend
    from harness.config.settings import LocalOptions

    start = time.perf_counter()
    HFBackend(local_models.KNOWN_MODELS["smollm2-135m"].name, LocalOptions()).load()
    return time.perf_counter() - start


def main_bench() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=200, help="STS-B validation items (the first N; default 200)")
    p.add_argument("--shots", default="2")
    p.add_argument("--instr", default="short")
    p.add_argument("--only", help=f"comma list of settings ({', '.join(SETTINGS)})")
    p.add_argument("--out", type=Path, help="write the rows as JSON here")
    a = p.parse_args()
    # SIGTERM unwinds like an exception, so the server's context manager stops it (never left running).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    chosen = a.only.split(",") if a.only else list(SETTINGS)
    base = ["--dataset", "stsb", "--limit", str(a.n), "--shots", a.shots, "--instr", a.instr]
    folder = local_models.model_dir("smollm2-135m")
    print(f"cpu cores {os.cpu_count()}; load average at start {load()}; items: STS-B validation first {a.n}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-smollm2-") as tmp:
        results = Path(tmp)
        for name in ("overlap", "random"):
            if name in chosen:
                before = load()
                m, wall, _ = run(["--model", name, *base], results, name)
                rows.append(row(name, m, wall, 0.0, a.n, before))
        load_s = model_load_seconds() if {"hf-raw", "hf-chat"} & set(chosen) else 0.0
        for name, mode in (("hf-raw", []), ("hf-chat", ["--chat"])):
            if name in chosen:
                before = load()
                m, wall, _ = run(["--model", "smollm2-135m", *base, "--scoring", "expected", *mode], results, name)
                rows.append(row(name, m, wall, load_s, a.n, before))
        served = [s for s in ("serve-chat", "serve-raw") if s in chosen]
        if served:
            start = time.perf_counter()
            with transformers_serve(folder, results / "serve") as server:
                started = time.perf_counter() - start
                print(f"transformers serve answered /health after {started:.1f} s")
                # transformers serve (without --continuous-batching) answers one request at a time: a few in
                # flight keep it busy; 16 would only queue, and on a loaded CPU pass the 120 s per-attempt timeout.
                api = ["--backend", "openai", "--model", str(folder), "--base-url", server.base_url, *base]
                api += ["--concurrency", "2"]
                for name in served:
                    if name == "serve-raw" and "--no-chat" not in run_parser().format_help():
                        print("serve-raw: skipped: this build has no --no-chat (raw /v1/completions over --base-url)")
                        continue
                    before = load()
                    m, wall, _ = run([*api, "--chat" if name == "serve-chat" else "--no-chat"], results, name)
                    rows.append(row(name, m, wall, 0.0, a.n, before))
    print(table(rows))
    if a.out:
        a.out.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


def table(rows: list[dict[str, Any]]) -> str:
    def f(x: Any) -> str:
        return f"{x:.2f}" if isinstance(x, float) else str(x)

    cols = ["setting", "n", "queries_per_s", "invalid_pct", "spearman", "spearman_valid", "spearman_expected",
            "expected_mass_mean", "input_tokens", "wall_s", "setup_s", "load_before", "load_after"]  # fmt: skip
    lines = ["| " + " | ".join(cols) + " | reasons |", "|" + " --- |" * (len(cols) + 1)]
    for r in rows:
        reasons = r["reasons"] if isinstance(r["reasons"], str) else json.dumps(r["reasons"], sort_keys=True)
        lines.append("| " + " | ".join(f(r[c]) for c in cols) + f" | {reasons} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main_bench())
