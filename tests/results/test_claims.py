"""The results folder is checked and the run folder claimed before the first request; stale claims are cleaned.

Runs go through run_eval.py against tests/fake_server.py; a request that reaches the server is money spent,
so "nothing sent" is checked on the server's own log.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.results.claims import claim, clean_stale
from harness.types import HarnessError
from tests.fake_server import FakeServer

ROOT = Path(__file__).resolve().parents[2]


def argv(results: Path, server: FakeServer, *extra: str) -> list[str]:
    return ["--model", "gpt-4o", "--base-url", server.openai_url, "--dataset", "stsb", "--limit", "6",
            "--results-dir", str(results), "--no-progress", *extra]  # fmt: skip


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p.write_text("x"), "is a file, not a folder"),
        (lambda p: (p.parent / "file").write_text("x"), "a part of that path is a file"),
    ],
)
def test_a_results_dir_that_cannot_hold_folders_fails_before_any_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: object, message: str
) -> None:
    results = tmp_path / "res"
    make(results)  # type: ignore[operator]
    target = results if results.exists() else tmp_path / "file" / "sub"
    with FakeServer() as server:
        assert main(argv(target, server)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: --results-dir") and message in err
    assert server.calls == []


def test_a_results_dir_that_cannot_be_written_fails_before_any_request(tmp_path: Path) -> None:
    """As root every folder is writable, so the run goes as `nobody` (setpriv) into a root-owned folder."""
    base = Path(tempfile.mkdtemp(dir="/tmp", prefix="h10a-ro-"))
    try:
        results = base / "res"
        results.mkdir()
        os.chmod(base, 0o755)
        os.chmod(results, 0o555)
        prefix: list[str] = []
        if os.geteuid() == 0:
            setpriv = "/usr/bin/setpriv"
            if not Path(setpriv).exists():
                pytest.skip("running as root without setpriv: cannot make a folder unwritable")
            prefix = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
        with FakeServer() as server:
            env = os.environ | {"PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
            proc = subprocess.run(
                [*prefix, sys.executable, str(ROOT / "run_eval.py"), *argv(results, server)],
                env=env, cwd=base, capture_output=True, text=True, timeout=120,
            )  # fmt: skip
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.count("\n") == 1 and "is not writable" in proc.stderr
        assert server.calls == [] and list(results.iterdir()) == []
    finally:
        os.chmod(base / "res", 0o755)
        subprocess.run(["rm", "-rf", str(base)], check=False)


def test_the_same_name_claimed_twice_gets_the_next_free_one_and_an_explicit_one_is_refused(tmp_path: Path) -> None:
    first = claim(tmp_path, "run-20261123-101010", explicit=False)
    second = claim(tmp_path, "run-20261123-101010", explicit=False)
    assert (first.name, second.name) == ("run-20261123-101010", "run-20261123-101010-2")
    with pytest.raises(HarnessError, match="is being written by another run: choose another --run-id"):
        claim(tmp_path, "run-20261123-101010", explicit=True)
    staging = first.staging()
    (staging / "config.json").write_text("{}")
    first.publish(staging)
    second.abandon()
    with pytest.raises(HarnessError, match="already exists: choose another --run-id"):
        claim(tmp_path, "run-20261123-101010", explicit=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run-20261123-101010"]


def _spawn(results: Path, server: FakeServer, *extra: str) -> subprocess.Popen[str]:
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, str(ROOT / "run_eval.py"), *argv(results, server, *extra)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def test_two_identical_commands_started_together_both_finish_in_their_own_folders(tmp_path: Path) -> None:
    results = tmp_path / "res"
    with FakeServer(latency=0.05) as server:
        procs = [_spawn(results, server) for _ in range(2)]
        outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    runs = sorted(p for p in results.iterdir() if p.is_dir())
    assert len(runs) == 2 and all((r / "metrics.json").is_file() for r in runs)
    assert not [p for p in results.iterdir() if p.name.startswith(".")]  # no locks, no staging left


def test_the_same_run_id_while_a_run_holds_it_is_refused_before_sending(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "res"
    with FakeServer(plan=lambda p, a: "slow") as slow, FakeServer() as other:
        # One request at a time (6 x SLOW_SECONDS): the run still holds its folder when the second one starts,
        # even on a loaded machine.
        proc = _spawn(results, slow, "--run-id", "mine", "--concurrency", "1")
        deadline = time.monotonic() + 60
        while not slow.calls and time.monotonic() < deadline:
            time.sleep(0.02)
        assert main(argv(results, other, "--run-id", "mine")) == 2
        assert proc.wait(120) == 0
    assert "is being written by another run: choose another --run-id" in capsys.readouterr().err
    assert other.calls == [] and (results / "mine" / "metrics.json").is_file()


def test_kill_9_during_the_final_write_leaves_nothing_the_next_run_does_not_clean(tmp_path: Path) -> None:
    """A process claims, stages half a folder and is killed: the next run removes the leftovers, and an
    explicit --run-id of the dead run may be taken over."""
    results = tmp_path / "res"
    code = (
        "import sys, time; from pathlib import Path; from harness.results.claims import claim\n"
        f"c = claim(Path({str(results)!r}), 'dead', explicit=True); s = c.staging()\n"
        "(s / 'config.json').write_text('{}'); print('staged', flush=True); time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], env=os.environ | {"PYTHONPATH": str(ROOT)},
                            stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert proc.stdout is not None and proc.stdout.readline() == "staged\n"
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    left = sorted(p.name for p in results.iterdir())
    assert left[0] == ".dead.lock" and left[1].startswith(".dead.staging-") and left[2] == "dead"
    with FakeServer() as server:
        assert main(argv(results, server, "--run-id", "dead")) == 0
    assert sorted(p.name for p in results.iterdir()) == ["cache.sqlite", "dead"]
    assert (results / "dead" / "metrics.json").is_file()
    assert clean_stale(results) == []


@pytest.mark.parametrize("mask", [0o022, 0o027])
def test_run_folders_get_the_users_file_mode(tmp_path: Path, mask: int) -> None:
    old = os.umask(mask)
    try:
        assert main(["--model", "overlap", "--dataset", "stsb", "--limit", "3", "--results-dir", str(tmp_path),
                     "--run-id", "r"]) == 0  # fmt: skip
    finally:
        os.umask(old)
    run = tmp_path / "r"
    assert stat.S_IMODE(run.stat().st_mode) == 0o777 & ~mask
    assert {stat.S_IMODE(f.stat().st_mode) for f in run.iterdir()} == {0o666 & ~mask}


def test_a_run_that_fails_with_exit_2_leaves_nothing_behind(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    results = tmp_path / "new" / "res"
    args = ["--model", "m", "--base-url", f"http://127.0.0.1:{port}/v1", "--dataset", "stsb", "--limit", "3",
            "--results-dir", str(results), "--max-retries", "0", "--no-progress"]  # fmt: skip
    assert main(args) == 2
    assert "connection error" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # no run folder, no cache.sqlite, not even the folders it made


def test_a_dry_run_claims_its_folder_too(tmp_path: Path) -> None:
    args = ["--model", "gpt-4o", "--dataset", "stsb", "--limit", "3", "--results-dir", str(tmp_path), "--dry-run"]
    assert main(args) == 0 and main(args) == 0
    runs = sorted(p for p in tmp_path.iterdir())
    assert len(runs) == 2 and all(json.loads((r / "metrics.json").read_text())["dry_run"] for r in runs)
