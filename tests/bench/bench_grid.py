"""CPU seconds of the full C-STS grid (none/short/long x k 0/2/4, 2,834 queries a cell) as a user runs it.

    python tests/bench/bench_grid.py [--archive csts.tar.enc --password-file PASSWORD] [--repeat 3] [--against REF]

Three commands, each in a fresh process with a fresh results folder, `--repeat` times:

- grid: the 9-cell sweep with the offline `overlap` model, its run folders and the sweep report;
- grid --dry-run: the same 9 cells rendered and counted, nothing called, no report;
- gpt-4o --dry-run: one cell priced for gpt-4o (exact tiktoken counts), no key needed, nothing sent.

CPU is user + system time of the process and everything it waited for (getrusage RUSAGE_CHILDREN), not wall
time. The machine is shared, so min and median of the repeats are printed, and `--against REF` (a git ref,
e.g. main) runs the same commands with that commit's code (`git archive` into a temporary folder), interleaved
with this checkout's, so both columns meet the same load. Without --archive the shared C-STS archive is used
(../shared beside the project, or $CSTS_SHARED_DIR, as for the tests). Not collected by pytest (no test_ prefix).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("CSTS_SHARED_DIR", ROOT.parent / "shared")) / "data" / "csts"  # as tests/conftest.py
GRID = ["--model", "overlap", "--instr", "none,short,long", "--shots", "0,2,4"]
COMMANDS = {
    "grid (9 cells + report)": GRID,
    "grid --dry-run": [*GRID, "--dry-run"],
    "gpt-4o --dry-run (1 cell)": ["--model", "gpt-4o", "--dry-run"],
}


def cpu_of(code: Path, args: list[str]) -> float:
    """User + system CPU seconds of one `code/run_eval.py` process (and any process it waited for). The script's
    folder comes first on sys.path, so it runs that folder's harness package."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory(prefix="bench-grid-") as tmp:
        env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "PYTHONPATH")}
        done = subprocess.run(
            [sys.executable, str(code / "run_eval.py"), *args, "--results-dir", str(Path(tmp) / "results")],
            cwd=code,
            env=env,
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise SystemExit(f"{code}/run_eval.py {' '.join(args)} exited {done.returncode}:\n{done.stderr}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def checkout(ref: str, into: Path) -> Path:
    """The files of commit `ref` (git archive), to run beside this checkout."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def summary(times: list[float]) -> str:
    return f"{min(times):7.2f} {statistics.median(times):7.2f}   " + " ".join(f"{t:.2f}" for t in times)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--archive", type=Path, default=SHARED / "csts.tar.enc")
    p.add_argument("--password-file", type=Path, default=SHARED / "PASSWORD")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--against", metavar="REF", help="also run the code of this git ref (e.g. main), interleaved")
    a = p.parse_args()
    if not a.archive.is_file():
        raise SystemExit(f"no C-STS archive at {a.archive}: pass --archive and --password-file")
    data = ["--archive", str(a.archive.resolve()), "--password-file", str(a.password_file.resolve())]
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; CPU s = user + sys")
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("PYTHONDONTWRITEBYTECODE is set: every run compiles the harness's modules from source")
    with tempfile.TemporaryDirectory(prefix="bench-grid-ref-") as ref_dir:
        codes = {"this checkout": ROOT}
        if a.against:
            codes = {a.against: checkout(a.against, Path(ref_dir)), **codes}
        print(f"{'command':<28} {'code':<14} {'min':>7} {'median':>7}   runs")
        for name, args in COMMANDS.items():
            times: dict[str, list[float]] = {label: [] for label in codes}
            for _ in range(a.repeat):
                for label, code in codes.items():
                    times[label].append(cpu_of(code, [*args, *data]))
            for label in codes:
                print(f"{name:<28} {label:<14} {summary(times[label])}", flush=True)
    print(f"load {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
