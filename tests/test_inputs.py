"""User-named input files: regular files only, read without ever blocking, one-line errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.inputs import check_output, check_regular, read_bytes, read_json, read_text
from harness.types import HarnessError


def test_reads_a_regular_file_and_drops_a_bom(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"\xef\xbb\xbfhello")
    assert read_bytes(tmp_path / "f", "x") == b"\xef\xbb\xbfhello"
    assert read_text(tmp_path / "f", "x") == "hello"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: None, "does not exist"),
        (lambda p: p.mkdir(), "is a directory, not a file"),
        (lambda p: os.mkfifo(p), r"is a FIFO \(named pipe\), not a file"),
    ],
)
def test_anything_but_a_regular_file_is_refused_without_blocking(tmp_path: Path, make, message: str) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "input.csv"
    make(path)
    for fn in (check_regular, read_bytes, read_text):
        with pytest.raises(HarnessError, match=f"^my file {path} {message}"):
            fn(path, "my file")


def test_text_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    (tmp_path / "latin1.txt").write_bytes("café".encode("latin-1"))
    with pytest.raises(HarnessError, match=r"latin1.txt is not UTF-8 text \(byte 3\)"):
        read_text(tmp_path / "latin1.txt", "answers file")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[" * 1200 + "]" * 1200, "not JSON this harness reads (nested too deep)"),
        ('{"a": 1', "not JSON (Expecting ',' delimiter, line 1)"),
    ],
)
def test_json_that_cannot_be_read_is_one_error(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "x.json"
    path.write_text('{"a": [1, 2.5, null]}')
    assert read_json(path, "record") == {"a": [1, 2.5, None]}
    path.write_text(text)
    with pytest.raises(HarnessError, match=f"^record {path}: " + message.replace("(", r"\(").replace(")", r"\)")):
        read_json(path, "record")


def test_output_paths_are_checked_before_any_work(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    check_output(tmp_path / "new" / "deeper", "--out", directory=True)  # creatable: fine
    with pytest.raises(HarnessError, match="exists and is not a directory"):
        check_output(tmp_path / "file", "--out", directory=True)
    with pytest.raises(HarnessError, match="exists and is not a regular file"):
        check_output(tmp_path, "--json", directory=False)
    with pytest.raises(HarnessError, match=r"cannot be created: .*file is a file"):
        check_output(tmp_path / "file" / "x.json", "--json", directory=False)


@pytest.mark.parametrize(
    "args",
    [
        ["--config", "list"],  # more than the output buffer: the write inside the command fails
        ["--model", "random", "--dataset", "stsb", "--limit", "2", "--dry-run"],  # a few lines: Python's flush at exit
    ],
)
def test_a_reader_that_stops_early_ends_the_command_quietly(args: list[str], tmp_path: Path) -> None:
    """`run_eval.py ... | head -1`: the pipe is closed before the command writes (the worst case of head exiting
    early). No traceback, no "Exception ignored", and the exit status shells give a program a closed pipe stopped."""
    import subprocess
    import sys

    from harness.inputs import EXIT_CLOSED_PIPE

    root = Path(__file__).resolve().parents[1]
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [sys.executable, str(root / "run_eval.py"), *args, "--results-dir", str(tmp_path / "results")],
            stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=120,
            env=os.environ | {"PYTHONPATH": str(root)},
        )  # fmt: skip
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (EXIT_CLOSED_PIPE, "")
