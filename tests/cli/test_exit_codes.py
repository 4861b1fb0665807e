"""Exit codes tell the truth: 3 when requests failed (sweeps too), 130/143 on SIGINT/SIGTERM, and a
deterministic failure (a prompt over the context length) is named, recorded per sample, not advised as
"rerun to retry", and gives the same outcome at any concurrency."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.calling.cache import ResponseCache
from harness.cli.main import main
from tests.fake_server import FakeServer, default_answer

ROOT = Path(__file__).resolve().parents[2]


def argv(results: Path, server: FakeServer, *extra: str) -> list[str]:
    return ["--model", "gpt-4o", "--base-url", server.openai_url, "--dataset", "stsb", "--limit", "12",
            "--results-dir", str(results), "--no-progress", "--max-retries", "1", *extra]  # fmt: skip


def too_long(prompt: str) -> bool:
    return default_answer(prompt) < "2.2"  # a fixed third or so of the prompts


def samples(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("fault", ["400-context", "400"])
def test_a_400_about_one_prompt_gives_the_same_outcome_at_any_concurrency(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fault: str
) -> None:
    outcomes = []
    for concurrency in ("1", "4"):
        with FakeServer(plan=lambda p, a: fault if too_long(p) else "ok") as server:
            code = main(argv(tmp_path, server, "--concurrency", concurrency, "--run-id", f"c{concurrency}"))
        err = capsys.readouterr().err
        rows = samples(tmp_path / f"c{concurrency}")
        outcomes.append((code, [(s["id"], s["output"], s["error"]) for s in rows]))
        failed = [s for s in rows if s["error"]]
        assert failed and all(too_long(s["prompt"]) for s in failed)
        kind = "context_length_exceeded" if fault == "400-context" else "bad_request"
        assert all(s["error"].startswith(f"{kind}: HTTP 400") and s["prediction"] is None for s in failed)
        assert "a rerun repeats" in err and "rerun the same command to retry" not in err
        metrics = json.loads((tmp_path / f"c{concurrency}" / "metrics.json").read_text())
        assert metrics["dispatch"]["deterministic_errors"] == len(failed)
    assert outcomes[0] == outcomes[1] and outcomes[0][0] == 3


def test_a_sweep_with_failed_requests_exits_3_and_names_the_cells(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeServer(plan=lambda p, a: "500" if too_long(p) and "Sentence" in p else "ok") as server:
        args = argv(tmp_path, server, "--instr", "none,short", "--max-retries", "0")
        assert main(args) == 3
        err = capsys.readouterr().err
        assert "cell stsb gpt-4o none k=0" in err and "cell stsb gpt-4o short k=0" in err
        assert "2 of 2 cells have failed requests" in err
        server.plan = lambda p, a: "ok"
        assert main(args) == 0  # the rerun retries the failed requests only and completes the cells
    assert "cells have failed" not in capsys.readouterr().err


def test_a_sweep_without_failures_exits_0(tmp_path: Path) -> None:
    with FakeServer() as server:
        assert main(argv(tmp_path, server, "--instr", "none,short")) == 0


@pytest.mark.parametrize(("sig", "code", "name"), [(signal.SIGINT, 130, "SIGINT"), (signal.SIGTERM, 143, "SIGTERM")])
def test_signals_exit_130_and_143_keep_cached_answers_and_write_no_run_folder(
    tmp_path: Path, sig: int, code: int, name: str
) -> None:
    answered: set[str] = set()

    def plan(prompt: str, attempt: int) -> str:
        if prompt in answered or len(answered) < 3:
            answered.add(prompt)
            return "ok"
        return "hang"

    results = tmp_path / "res"
    # A process started in the background by a shell without job control ignores SIGINT, and its children inherit
    # that: pytest run that way would see the run ignore Ctrl-C as it should. The child gets SIGINT's default.
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    with FakeServer(plan=plan) as server:
        try:
            proc = subprocess.Popen(
                [sys.executable, str(ROOT / "run_eval.py"), *argv(results, server, "--run-id", "r")],
                env=os.environ | {"PYTHONPATH": str(ROOT)}, stderr=subprocess.PIPE, text=True,
            )  # fmt: skip
        finally:
            signal.signal(signal.SIGINT, inherited)
        deadline = time.monotonic() + 60
        while server.in_flight < 3 and time.monotonic() < deadline:  # three answered, the rest hanging
            time.sleep(0.02)
        time.sleep(0.2)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert err.strip().splitlines()[-1].startswith(f"error: interrupted ({name})")
    assert not (results / "r").exists() and len(ResponseCache(results / "cache.sqlite")) == 3
