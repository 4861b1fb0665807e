"""Helpers of tests/bench/bench_vs_lmeval.py (not collected by pytest): made-up prompts, the fake server in a
process of its own, a contender's run in a process of its own, the machine's description."""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BENCH = Path(__file__).resolve().parent

# Made-up words: nothing from C-STS.
_WHO = ["a tall courier", "two quiet painters", "an old ferry pilot", "three young cyclists", "a market baker"]
_DOES = ["carries", "repaints", "inspects", "folds", "photographs", "sorts", "unloads", "sketches"]
_WHAT = ["a blue umbrella", "the copper kettle", "a stack of maps", "wooden crates", "the striped awning"]
_WHERE = ["beside the canal", "on a windy pier", "under the railway bridge", "near the flower stall", "in a yard"]
_ASPECT = ["the colour of the object", "the number of people", "the weather", "the place", "the activity"]


def make_prompts(n: int, seed: int = 0, size: int = 600) -> list[str]:
    """n distinct made-up prompts of about `size` characters, shaped like a rating prompt with two sentences."""
    rng = random.Random(seed)

    def sentence() -> str:
        return f"{rng.choice(_WHO)} {rng.choice(_DOES)} {rng.choice(_WHAT)} {rng.choice(_WHERE)}"

    prompts = []
    for i in range(n):
        head = f"Rate from 1 to 5 how alike the two sentences are with respect to {rng.choice(_ASPECT)}. Item {i}.\n"
        body = ""
        while len(head) + len(body) < size - 60:
            body += f"Sentence 1: {sentence().capitalize()}. Sentence 2: {sentence().capitalize()}.\n"
        prompts.append(f"{head}{body}Aspect: {rng.choice(_ASPECT)}.\nAnswer with a number only. Output:")
    return prompts


def write_json(directory: Path, name: str, value: object) -> Path:
    path = directory / name
    path.write_text(json.dumps(value))
    return path


class Server:
    """tests/fake_server.py in its own process (its CPU is not counted against a contender)."""

    def __init__(self, latency: float, flags: Sequence[str] = ()) -> None:
        command = [sys.executable, str(ROOT / "tests" / "fake_server.py"), "--latency", str(latency), *flags]
        self.flags = list(flags)
        self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().split()
        if line[:1] != ["port"]:
            self.stop()
            raise SystemExit(f"fake server did not start: {line}")
        self.port = int(line[1])
        self.url = f"http://127.0.0.1:{self.port}/v1"

    def stats(self) -> dict[str, Any]:
        """GET /stats: served, max_in_flight, rate_limit {admitted, admitted_prompt_tokens, rate_limited, ...}."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/stats", timeout=30) as reply:
            return dict(json.load(reply))

    def cpu(self) -> float:
        """The server process's CPU seconds so far (user + system; Linux's /proc, else NaN)."""
        try:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return float("nan")
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


@contextmanager
def server(latency: float, flags: Sequence[str] = ()) -> Iterator[Server]:
    s = Server(latency, flags)
    try:
        yield s
    finally:
        s.stop()


@dataclass
class Contender:
    name: str
    python: Path  # the interpreter of its venv
    script: Path  # tests/bench/ours_driver.py or lmeval_driver.py
    env: dict[str, str] = field(default_factory=dict)  # on top of a cleaned environment


def ours(python: Path | None = None) -> Contender:
    return Contender("ours", python or Path(sys.executable), BENCH / "ours_driver.py", {"PYTHONPATH": str(ROOT)})


def floor() -> Contender:
    """Plain aiohttp posting prebuilt bodies (tests/bench/aiohttp_driver.py): what the HTTP library alone costs."""
    return Contender("plain aiohttp", Path(sys.executable), BENCH / "aiohttp_driver.py")


def lmeval(python: Path, version: str) -> Contender:
    # Offline: its imports (datasets, huggingface_hub) must not reach out; its traffic goes to 127.0.0.1 only.
    env = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "OPENAI_API_KEY": "EMPTY"}
    return Contender(f"lm-eval {version}", python, BENCH / "lmeval_driver.py", env)


def run(contender: Contender, spec: dict[str, Any], timeout: float) -> dict[str, Any]:
    """One run in a fresh process: its JSON line ({n, answered, wall, cpu, error, ...}), or an error."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")} | contender.env
    with tempfile.TemporaryDirectory(prefix="bench-cache-") as cache_dir:
        command = [str(contender.python), str(contender.script), json.dumps(spec | {"cache_dir": cache_dir})]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
        except subprocess.TimeoutExpired:
            return {"n": spec.get("n", 0), "answered": 0, "error": f"timed out after {timeout:.0f} s"}
    lines = done.stdout.strip().splitlines()
    try:
        return dict(json.loads(lines[-1]))
    except (IndexError, ValueError):
        tail = " | ".join(done.stderr.strip().splitlines()[-3:])
        return {"n": spec.get("n", 0), "answered": 0, "error": f"exit {done.returncode}: {tail[-400:]}"}


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "-"


def machine(lmeval_versions: dict[str, str] | None) -> list[str]:
    """Lines describing the machine and the packages each side runs on."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    lines = [
        f"machine: {platform.machine()}, {cores} cores usable ({os.cpu_count()} online), load average {load}, "
        f"{platform.system()} {platform.release()}",
        f"ours: python {platform.python_version()}, openai {_version('openai')}, anthropic {_version('anthropic')}, "
        f"aiohttp {_version('aiohttp')}, uvloop {_version('uvloop')} (server and ours share this venv)",
    ]
    if lmeval_versions:
        v = lmeval_versions
        lines.append(
            f"lm-eval venv: python {v['python']}, lm-eval {v['lm_eval']}, aiohttp {v['aiohttp']}, "
            f"tenacity {v['tenacity']}"
        )
    return lines


def spread(values: Sequence[float]) -> tuple[float, float]:
    """(min, median); NaNs when there is nothing."""
    return (min(values), statistics.median(values)) if values else (float("nan"), float("nan"))


def table(header: Sequence[str], rows: Sequence[Sequence[str]], align: str) -> str:
    """Columns as wide as their widest cell; `align` holds one "<" or ">" per column."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    return "\n".join(
        "  ".join(f"{cell:{a}{w}}" for cell, a, w in zip(row, align, widths, strict=True)).rstrip()
        for row in [header, *rows]
    )
