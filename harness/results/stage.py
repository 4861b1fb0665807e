"""Folders written whole or not at all: staged in a hidden folder beside the target, then renamed into place.

The one staging helper of the harness: run folders (results/write.py), sweep folders (sweep.py) and report
folders (reporting/report.py) are all written through `staged`, so a crash mid-write leaves no half folder, and a
full disk is one line naming the folder (not a traceback). Two processes replacing one report folder at once (two
`report` commands with one --out) take turns under a lock beside it (`held`): the last to finish leaves its report.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from harness.inputs import disk_full, disk_full_error
from harness.results.claims import Claim

try:
    import fcntl
except ImportError:  # not POSIX: two processes replacing one report folder at once are not kept apart
    fcntl = None  # type: ignore[assignment]

__all__ = ["held", "staged", "umask"]


def umask() -> int:
    """The process's file-creation mask: read without changing it where Linux says it (4.7 and later); elsewhere
    set and set back (another thread could create a file under 0o022 for that instant)."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:  # no /proc (macOS)
        status = ""
    for line in status.splitlines():
        name, _, value = line.partition(":")
        if name == "Umask":  # a value that is no octal number raises: never a guess
            return int(value, 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def staged(target: Claim | Path) -> Iterator[Path]:
    """Yield an empty hidden folder; when the block ends, rename it onto `target`; if the block raises (or is
    interrupted), remove it and leave `target` as it was.

    A Claim (a run or sweep folder claimed before the first request): the folder is renamed onto the claimed,
    still empty, folder and the claim released; on failure the claim is abandoned (no trace left). A Path (a
    report folder): a folder already there is replaced by the new one.
    """
    if isinstance(target, Claim):
        try:
            staging = target.staging()
            yield staging
            target.publish(staging)
        except BaseException as e:
            target.abandon()
            if disk_full(e):  # the answers are in the response cache: a rerun writes the folder without buying them
                why = f"{target.final} was not written; free space and run the same command again (answers in the "
                raise disk_full_error(target.results_dir, e, why + "response cache are not bought again)") from None
            raise
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        yield staging
        os.chmod(staging, 0o777 & ~umask())  # mkdtemp makes 0700; results are as readable as the user's files
        _replace(staging, target)
    except BaseException as e:
        shutil.rmtree(staging, ignore_errors=True)
        if disk_full(e):
            raise disk_full_error(target.parent, e, f"{target} was not written") from None
        raise


def _replace(staging: Path, target: Path) -> None:
    """Rename staging onto target; an old folder there is moved aside first and removed after. Under `held`: a
    second process replacing the same folder between those two renames ended one of them in a traceback (issue 41,
    two `report` commands with one --out)."""
    old = target.with_name(f".{target.name}.old-{os.getpid()}")  # removed outside the lock: one name per process
    with held(target):
        if target.exists():
            shutil.rmtree(old, ignore_errors=True)  # a killed process's, with our pid
            os.rename(target, old)
        os.rename(staging, target)
    shutil.rmtree(old, ignore_errors=True)


@contextlib.contextmanager
def held(target: Path) -> Iterator[None]:
    """An exclusive lock on replacing (or reading back) the folder `target`, waited for: `.NAME.lock` beside it,
    removed when released. The inode check catches a lock file another holder unlinked meanwhile, as claims.py's."""
    if fcntl is None:
        yield
        return
    path = target.with_name(f".{target.name}.lock")
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o666)  # POSIX (fcntl) has O_NOFOLLOW
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            if os.stat(path).st_ino == os.fstat(fd).st_ino:
                break
        except FileNotFoundError:
            pass
        os.close(fd)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            path.unlink()  # while still locked: a waiter on this inode sees it gone and opens a new one
        os.close(fd)
