"""Read the files a user names (CSVs, archive, password, answers, prices): regular files only, one-line errors.

A FIFO, a socket or a device where a file should be would block `open()` or `read()` forever; a directory
fails with a bare `IsADirectoryError`. Each is refused here with the path and what was expected. A full disk
while writing (`disk_full`) is likewise one line that names the path (`disk_full_error`), and a reader of our
output that goes away (`| head -1`) ends the command quietly (`quiet_on_closed_stdout`).
"""

from __future__ import annotations

import errno
import json
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.types import HarnessError

EXIT_CLOSED_PIPE = 141  # 128 + SIGPIPE: what shells report for a program stopped by a closed pipe (`yes | head -1`)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a special file"


def _unreadable(path: Path, what: str, e: OSError) -> HarnessError:
    """The one line for a user-named file that cannot be opened or read."""
    if isinstance(e, FileNotFoundError):
        return HarnessError(f"{what} {path} does not exist")
    if isinstance(e, IsADirectoryError):
        return HarnessError(f"{what} {path} is a directory, not a file")
    return HarnessError(f"cannot read {what} {path}: {e.strerror}")


def check_regular(path: Path, what: str) -> None:
    """Fail in one line unless `path` exists and is a regular file (symlinks followed); opens nothing."""
    try:
        mode = os.stat(path).st_mode
    except OSError as e:
        raise _unreadable(path, what, e) from None
    if not stat.S_ISREG(mode):
        raise HarnessError(f"{what} {path} is {_kind(mode)}, not a file")


def read_bytes(path: Path, what: str, limit: int | None = None) -> bytes:
    """The file's bytes. Opened non-blocking and checked with fstat before any read, so a FIFO never hangs
    (and a file swapped for one between a check and the open is caught too). `limit`: the most bytes the caller
    takes; a larger file (or one that grows past it while read) is one error line, never read whole."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        raise _unreadable(path, what, e) from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise HarnessError(f"{what} {path} is {_kind(info.st_mode)}, not a file")
    if limit is not None and info.st_size > limit:
        os.close(fd)
        raise too_large(path, what, limit)
    with os.fdopen(fd, "rb") as f:
        try:
            data = f.read() if limit is None else f.read(limit + 1)
        except OSError as e:
            raise _unreadable(path, what, e) from None
    if limit is not None and len(data) > limit:
        raise too_large(path, what, limit)
    return data


def too_large(path: Path, what: str, limit: int) -> HarnessError:
    """The one line for a file over what its reader takes."""
    return HarnessError(f"{what} {path} is larger than the {limit / 2**20:,.0f} MiB this reader takes")


def read_text(path: Path, what: str, limit: int | None = None) -> str:
    """The file as UTF-8 text (a byte-order mark is dropped); anything else is one clear error."""
    data = read_bytes(path, what, limit)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise HarnessError(f"{what} {path} is not UTF-8 text (byte {e.start})") from None


def read_json(path: Path, what: str, limit: int | None = None) -> Any:
    """The file as JSON: not JSON, or nested deeper than Python's decoder goes, is one clear error (no traceback)."""
    text = read_text(path, what, limit)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise HarnessError(f"{what} {path}: not JSON ({e.msg}, line {e.lineno})") from None
    except RecursionError:
        raise HarnessError(f"{what} {path}: not JSON this harness reads (nested too deep)") from None


def check_output(path: Path, what: str, *, directory: bool) -> None:
    """Fail in one line, before any work, when `path` cannot become the file or folder asked for: it exists
    as the wrong kind, or one of its parents is a file."""
    path = Path(path)
    if path.exists():
        if directory and not path.is_dir():
            raise HarnessError(f"{what} {path} exists and is not a directory")
        if not directory and not path.is_file():
            raise HarnessError(f"{what} {path} exists and is not a regular file")
    for parent in path.absolute().parents:
        if parent.exists():
            if not parent.is_dir():
                raise HarnessError(f"{what} {path} cannot be created: {parent} is a file")
            if not os.access(parent, os.W_OK | os.X_OK) and not path.exists():
                raise HarnessError(f"{what} {path} cannot be created: {parent} is not writable")
            return


def disk_full(error: BaseException) -> bool:
    """Whether an error is a full disk (or a used-up quota): OSError's ENOSPC/EDQUOT, SQLite's SQLITE_FULL."""
    if isinstance(error, OSError):
        return error.errno in (errno.ENOSPC, errno.EDQUOT)
    code = getattr(error, "sqlite_errorcode", None)  # sqlite3.Error, without importing sqlite3 here
    return code == 13 or (code is None and "database or disk is full" in str(error))  # 13: SQLITE_FULL


def disk_full_error(path: Path, error: BaseException, what: str) -> HarnessError:
    """The one line for a full disk: which path, that the disk is full (not a lock, not a bug), what was kept."""
    reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
    return HarnessError(f"the disk holding {path} is full ({reason}): {what}")


def quiet_on_closed_stdout(command: Callable[[], int]) -> int:
    """Run `command`; if whoever reads standard output stops early (`run_eval.py --help | head -1`), end with
    EXIT_CLOSED_PIPE and no traceback. Output is flushed here, so a closed pipe shows where it is caught rather
    than in Python's own flush at exit; standard output then points at /dev/null, so that flush fails no more."""
    try:
        try:
            return command()
        finally:
            sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return EXIT_CLOSED_PIPE
