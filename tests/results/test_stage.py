"""results/stage.py: a folder appears whole or not at all, whether the writer raises or is killed mid-write."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from harness.results.claims import claim, clean_stale
from harness.results.stage import held, staged, umask

ROOT = Path(__file__).resolve().parents[2]


def _entries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_a_claimed_folder_is_filled_by_one_rename(tmp_path: Path) -> None:
    claimed = claim(tmp_path, "run", explicit=True)
    with staged(claimed) as staging:
        (staging / "a.txt").write_text("a")
        assert _entries(claimed.final) == []  # nothing visible until the block ends
    assert _entries(claimed.final) == ["a.txt"]
    assert _entries(tmp_path) == ["run"]  # no staging folder, no lock file left


def test_an_error_mid_write_leaves_no_claimed_folder_and_frees_the_name(tmp_path: Path) -> None:
    claimed = claim(tmp_path, "run", explicit=True)
    with pytest.raises(RuntimeError, match="disk on fire"), staged(claimed) as staging:
        (staging / "half.txt").write_text("half")
        raise RuntimeError("disk on fire")
    assert _entries(tmp_path) == []
    claim(tmp_path, "run", explicit=True).abandon()  # the name is free again


def test_a_report_folder_replaces_the_old_one_only_when_whole(tmp_path: Path) -> None:
    out = tmp_path / "report"
    with staged(out) as staging:
        (staging / "v1.txt").write_text("1")
    assert _entries(out) == ["v1.txt"]
    with pytest.raises(KeyboardInterrupt), staged(out) as staging:
        (staging / "v2.txt").write_text("2")
        raise KeyboardInterrupt
    assert _entries(out) == ["v1.txt"] and _entries(tmp_path) == ["report"]  # old kept, nothing hidden left
    with staged(out) as staging:
        (staging / "v2.txt").write_text("2")
    assert _entries(out) == ["v2.txt"] and _entries(tmp_path) == ["report"]


@pytest.mark.parametrize("mask", [0o027, 0o002, 0o077])
def test_umask_reads_the_processs_mask_without_changing_it(mask: int) -> None:
    old = os.umask(mask)
    try:
        assert umask() == mask and umask() == mask  # the same twice: read, not reset to a default
    finally:
        os.umask(old)


def test_the_lock_file_is_made_as_any_file_of_the_user(tmp_path: Path) -> None:
    with held(tmp_path / "report"):
        lock = tmp_path / ".report.lock"
        assert stat.S_IMODE(lock.stat().st_mode) == 0o666 & ~umask()


def test_the_blocks_own_error_is_the_one_raised_whatever_the_cleanup_finds(tmp_path: Path) -> None:
    """A block that failed after its staging folder went (moved away, a disk unmounted) raises its own error, not
    the cleanup's FileNotFoundError: a full disk stays one line."""
    with pytest.raises(ValueError, match="the block's"), staged(tmp_path / "report") as staging:
        staging.rename(tmp_path / "moved")
        raise ValueError("the block's")
    assert _entries(tmp_path) == ["moved"]


def test_a_report_folder_is_written_where_its_parents_do_not_exist_yet(tmp_path: Path) -> None:
    with staged(tmp_path / "a" / "b" / "report") as staging:
        (staging / "report.md").write_text("x")
    assert _entries(tmp_path / "a" / "b") == ["report"] and _entries(tmp_path / "a" / "b" / "report") == ["report.md"]


def test_a_staged_folder_has_the_users_mode(tmp_path: Path) -> None:
    with staged(tmp_path / "report") as staging:
        assert stat.S_IMODE(staging.stat().st_mode) == 0o700  # private while it is written
    assert stat.S_IMODE((tmp_path / "report").stat().st_mode) == 0o777 & ~umask()


KILLED_MID_WRITE = """
import os, signal, sys
from pathlib import Path
from harness.results.claims import claim
from harness.results.stage import staged

where = Path(sys.argv[2])
target = claim(where, "run", explicit=True) if sys.argv[1] == "claim" else where / "report"
with staged(target) as staging:
    (staging / "half.txt").write_text("half")
    os.kill(os.getpid(), signal.SIGKILL)  # no cleanup code runs: as a power cut or the OOM killer
"""


@pytest.mark.parametrize("kind", ["claim", "path"])
def test_a_writer_killed_mid_write_leaves_no_half_folder(tmp_path: Path, kind: str) -> None:
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(KILLED_MID_WRITE), kind, str(tmp_path)], env=env, timeout=60
    )
    assert proc.returncode == -signal.SIGKILL
    visible = [name for name in _entries(tmp_path) if not name.startswith(".")]
    if kind == "path":
        assert visible == []  # the half-written report only ever lived in a hidden folder
    else:
        assert visible == ["run"] and _entries(tmp_path / "run") == []  # the empty claim of a dead run
        clean_stale(tmp_path)  # what the next run in this folder does first
        assert _entries(tmp_path) == []


def test_held_lets_one_holder_in_at_a_time_and_leaves_no_lock_file(tmp_path: Path) -> None:
    target, order, inside = tmp_path / "report", [], threading.Event()

    def first() -> None:
        with held(target):
            inside.set()
            time.sleep(0.3)  # the second waits however long this takes: only the order is asserted
            order.append("first out")

    holder = threading.Thread(target=first)
    holder.start()
    assert inside.wait(30)
    with held(target):  # another open file of the same lock: flock makes it wait, in one process too
        order.append("second in")
    holder.join()
    assert order == ["first out", "second in"] and _entries(tmp_path) == []


RACING = """
import sys
from pathlib import Path
from harness.results.stage import held, staged

out, rounds, name = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
for i in range(rounds):
    with staged(out) as staging:
        (staging / "report.md").write_text(f"{name} {i}\\n")
    with held(out):  # as the report command reads back what it wrote
        assert (out / "report.md").read_text().split()[1].isdigit()
"""


def test_two_processes_replacing_one_report_folder_take_turns(tmp_path: Path) -> None:
    """Issue 41: two `report` commands writing one --out at once. Each process here replaces the folder 150 times;
    before the lock, one of them soon renamed its folder onto one the other had just put in place (OSError:
    Directory not empty) or moved a folder aside that was gone (FileNotFoundError), a traceback."""
    out = tmp_path / "report"
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-c", textwrap.dedent(RACING), str(out), "150"]
    racers = [subprocess.Popen([*argv, name], env=env, stderr=subprocess.PIPE, text=True) for name in ("a", "b")]
    errors = [p.communicate(timeout=120)[1] for p in racers]
    assert [p.returncode for p in racers] == [0, 0], errors
    assert _entries(tmp_path) == ["report"]  # no folder moved aside, no staging folder, no lock file left
    assert (out / "report.md").read_text() in ("a 149\n", "b 149\n")  # the last to finish, whole


def test_a_full_results_disk_is_one_line_and_the_rerun_buys_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--results-dir on a real, nearly full tmpfs (the cache elsewhere): the run folder cannot be written; one
    `error:` line names the folder and the full disk; every answer is in the cache, so the rerun sends nothing."""
    from harness.cli.main import main
    from tests.fake_server import FakeServer
    from tests.small_disk import small_disk

    with small_disk(tmp_path / "disk", "256k") as disk, FakeServer() as server:
        results = disk.path / "res"
        argv = ["--model", "gpt-4o", "--base-url", server.openai_url, "--dataset", "stsb", "--limit", "60",
                "--results-dir", str(results), "--cache", str(tmp_path / "cache.sqlite"), "--no-progress",
                "--run-id", "r"]  # fmt: skip
        results.mkdir()
        disk.fill(leave=4096)
        assert main(argv) == 2
        err = capsys.readouterr().err
        sent = len(server.calls)
        assert _entries(results) == []  # no half folder, no staging folder, no lock
        disk.free()
        assert main(argv) == 0
        assert len(server.calls) == sent == 60
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: the disk holding {results} is full"), err
    assert f"{results / 'r'} was not written" in lines[0] and "Traceback" not in err


def test_a_report_folder_on_a_full_disk_is_one_line_and_the_old_report_stays(tmp_path: Path) -> None:
    from harness.types import HarnessError
    from tests.small_disk import small_disk

    with small_disk(tmp_path / "disk", "256k") as disk:
        report = disk.path / "report"
        with staged(report) as staging:
            (staging / "report.md").write_text("old\n")
        disk.fill(leave=8192)
        full = rf"the disk holding {disk.path} is full .*: {report} was not written"
        with pytest.raises(HarnessError, match=full), staged(report) as staging:
            (staging / "report.md").write_text("new\n" * 10_000)
        assert _entries(disk.path) == [".filler", "report"] and (report / "report.md").read_text() == "old\n"
