"""Issue 30, item 6: `report` and `compare` read run files as harness/inputs.py reads a user's files. A FIFO at
manifest.json or samples.jsonl is refused, never waited on; a manifest that names /dev/zero or a file outside the
folder names no file of the run. Each command runs on a thread with a deadline: a hang fails the test."""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.results.manifest import MANIFEST
from tests.synthetic_runs import make_run


def finishes(command: Callable[[], int], wait: float = 60.0) -> int:
    codes: list[int] = []
    thread = threading.Thread(target=lambda: codes.append(command()), daemon=True)
    thread.start()
    thread.join(wait)
    if thread.is_alive():  # unblock the reader so the thread can end, then fail
        pytest.fail(f"the command hung (no end within {wait:g}s)")
    return codes[0]


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    return make_run(tmp_path / "results", "a", n=40), make_run(tmp_path / "results", "b", n=40, offset=0.3)


def fifo_at(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


@pytest.mark.parametrize("name", [MANIFEST, "samples.jsonl", "metrics.json", "config.json"])
def test_report_skips_a_run_with_a_fifo_in_it_and_reports_the_others(
    runs: tuple[Path, Path], name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good, bad = runs
    fifo_at(bad / name)
    code = finishes(lambda: main(["report", str(good), str(bad), "--out", str(tmp_path / "rep")]))
    err = capsys.readouterr().err
    if name == MANIFEST:  # the run itself is readable: its manifest is not, so it is shown flagged
        assert code == 0 and f"warning: {bad}: run folder altered after it was written: {MANIFEST} is unreadable" in err
    elif name == "config.json":  # no config.json file: not a run folder at all, one line and nothing written
        assert (
            code == 2
            and err
            == f"error: {bad} is neither a run folder (config.json), a sweep folder (sweep.json) "
            "nor a folder holding them\n"
        )
        assert not (tmp_path / "rep").exists()
    else:
        assert code == 0 and f"warning: skipped: {bad} is not a readable run folder" in err
        assert "is a FIFO (named pipe), not a file" in err


@pytest.mark.parametrize("name", [MANIFEST, "samples.jsonl"])
def test_compare_refuses_a_fifo_in_one_line(
    runs: tuple[Path, Path], name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = runs
    fifo_at(b / name)
    code = finishes(lambda: main(["compare", str(a), str(b), "--resamples", "50"]))
    out, err = capsys.readouterr()
    if name == MANIFEST:  # shown, flagged where its numbers are
        assert code == 0 and f"warning: B: run folder altered after it was written: {MANIFEST} is unreadable" in out
    else:
        assert code == 2 and err.startswith("error: ") and "is a FIFO (named pipe), not a file" in err


# /dev/null, not the /dev/zero of the issue: the code before this fix read /dev/zero until the machine ran out of
# memory (20 GB, killed), and this test must be safe to run against it. Any device is refused the same way.
@pytest.mark.parametrize("named", ["/dev/null", "../outside.json", "/etc/hostname"])
def test_a_manifest_naming_a_file_outside_the_run_makes_it_altered_and_reads_nothing_there(
    runs: tuple[Path, Path], named: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good, bad = runs
    (bad.parent / "outside.json").write_text("{}")
    manifest = json.loads((bad / MANIFEST).read_text())
    manifest["files"][named] = {"bytes": 1, "sha256": "0" * 64}
    (bad / MANIFEST).write_text(json.dumps(manifest))
    code = finishes(lambda: main(["report", str(good), str(bad), "--out", str(tmp_path / "rep")]))
    err = capsys.readouterr().err
    assert (
        code == 0
        and f"warning: {bad}: run folder altered after it was written: {named} is missing or unreadable" in err
    )


def test_a_run_file_that_links_to_a_device_is_refused(
    runs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good, bad = runs
    (bad / "samples.jsonl").unlink()
    (bad / "samples.jsonl").symlink_to("/dev/null")  # /dev/zero as the issue has it: see above
    code = finishes(lambda: main(["report", str(good), str(bad), "--out", str(tmp_path / "rep")]))
    err = capsys.readouterr().err
    assert code == 0 and "is a device, not a file" in err
    shutil.rmtree(tmp_path / "rep")
