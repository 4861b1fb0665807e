"""A real full disk for tests: a small tmpfs mounted for one test, filled up to a few free bytes.

Mounting needs root (or CAP_SYS_ADMIN); where `mount` fails the test is skipped with the reason. The file system
is real: the harness meets the kernel's own ENOSPC and SQLite's own SQLITE_FULL, nothing is faked.
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


class SmallDisk:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.filler = path / ".filler"

    def fill(self, leave: int = 0) -> None:
        """Take every free byte (ENOSPC is the kernel's), then give `leave` bytes back (whole pages)."""
        with open(self.filler, "ab", buffering=0) as f:
            try:
                while True:
                    f.write(b"\0" * 4096)
            except OSError as e:
                assert e.errno == errno.ENOSPC
            if leave:
                f.truncate(max(0, f.tell() - leave))

    def free(self) -> None:
        """Space again, as a user who deletes a file."""
        self.filler.unlink(missing_ok=True)

    def free_bytes(self) -> int:
        s = os.statvfs(self.path)
        return s.f_bavail * s.f_frsize


@contextlib.contextmanager
def small_disk(path: Path, size: str = "1m") -> Iterator[SmallDisk]:
    """Mount a tmpfs of `size` at `path` (made if missing) for the block; skip the test if it cannot be mounted."""
    path.mkdir(parents=True, exist_ok=True)
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0777", "tmpfs", str(path)],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError) as e:
        pytest.skip(f"a full disk needs a small tmpfs, and `mount` could not run: {e}")
    if done.returncode != 0:
        pytest.skip(f"a full disk needs a small tmpfs (root or CAP_SYS_ADMIN): mount said {done.stderr.strip()!r}")
    try:
        yield SmallDisk(path)
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True, timeout=30, check=False)
