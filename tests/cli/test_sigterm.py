"""SIGTERM during an API run or a sweep prints the one expected line and no traceback, however busy the event
loop was when the signal came (a real process against a local server, signalled mid-run several times: the
traceback showed in about half the tries before the fix), and an interrupted sweep names the cells it kept."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fake_server import FakeServer

ROOT = Path(__file__).resolve().parents[2]
RUN_LINE = (
    "error: interrupted (SIGTERM); no results were written; answers already in the response cache are reused "
    "when the same command runs again"
)
# Without uvloop (Windows, or not installed) dispatch runs on asyncio's own loop: both are checked.
NO_UVLOOP = "import sys; sys.modules['uvloop'] = None; from harness.cli.main import main; sys.exit(main())"
# slow: real processes, each signalled mid-run several times (half a minute a test on two cores).
pytestmark = pytest.mark.slow


def start(results: Path, server: FakeServer, loop: str, *extra: str) -> subprocess.Popen[str]:
    args = ["--model", "gpt-4o", "--base-url", server.openai_url, "--dataset", "stsb", "--results-dir", str(results),
            "--no-progress", *extra]  # fmt: skip
    head = [sys.executable, str(ROOT / "run_eval.py")] if loop == "uvloop" else [sys.executable, "-c", NO_UVLOOP]
    return subprocess.Popen(
        [*head, *args], env=os.environ | {"PYTHONPATH": str(ROOT)}, cwd=ROOT,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def wait_for(condition: object, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120
    while not condition() and proc.poll() is None and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(0.005)
    assert proc.poll() is None, proc.communicate()


@pytest.mark.parametrize("loop", ["uvloop", "asyncio"])
def test_sigterm_amid_busy_requests_prints_one_line_and_no_traceback(tmp_path: Path, loop: str) -> None:
    for attempt in range(4):  # the signal lands somewhere else each time: in a task, a transport callback, a select
        # No latency: the loop is busy reading replies when the signal comes; a little: it is often between them.
        with FakeServer(latency=0.02 * (attempt % 2)) as server:
            proc = start(tmp_path / f"r{attempt}", server, loop, "--limit", "3000", "--no-cache")
            enough = 40 + 15 * attempt
            wait_for(lambda server=server, enough=enough: len(server.answered) >= enough, proc)  # type: ignore[misc]
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=120)
        assert (proc.returncode, err) == (143, RUN_LINE + "\n"), f"try {attempt + 1}"


@pytest.mark.parametrize("loop", ["uvloop", "asyncio"])
def test_an_interrupted_sweep_names_the_finished_cells_it_kept_and_a_rerun_reuses_them(
    tmp_path: Path, loop: str
) -> None:
    answered: set[str] = set()
    hang = [True]

    def plan(prompt: str, attempt: int) -> str:  # the first cell's 4 prompts are answered, the second's hang
        if prompt in answered or len(answered) < 4 or not hang[0]:
            answered.add(prompt)
            return "ok"
        return "hang"

    results = tmp_path / "res"
    sweep = ("--instr", "none,short", "--limit", "4", "--no-cache")
    for attempt in range(2):
        answered.clear()
        with FakeServer(plan=plan) as server:
            proc = start(results / str(attempt), server, loop, *sweep)
            wait_for(lambda server=server: server.in_flight >= 4, proc)  # type: ignore[misc]
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=120)
            first = next(Path(line.split(" -> ")[1]) for line in out.splitlines() if line.startswith("[1/2]"))
            assert first.parent == results / str(attempt) and (first / "metrics.json").is_file()
            assert (proc.returncode, err) == (
                143,
                f"error: interrupted (SIGTERM); the sweep's 1 finished cells are kept and reused by the same "
                f"command ({first}); the cell that was running and the sweep's report were not written; answers "
                "already in the response cache are reused when the same command runs again\n",
            ), f"try {attempt + 1}"
            assert sorted(p.name for p in (results / str(attempt)).iterdir()) == [first.name]
            if attempt == 1:  # the same command again: the kept cell is reused, only the other one is sent
                hang[0], sent = False, len(server.calls)
                proc = start(results / str(attempt), server, loop, *sweep)
                out, _ = proc.communicate(timeout=120)
                assert proc.returncode == 0 and f"[1/2] stsb gpt-4o none k=0: reused {first}" in out
                assert len(server.calls) - sent == 4
