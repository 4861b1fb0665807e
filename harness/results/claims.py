"""Claim a run (or sweep) folder before the first request, so two runs never collide at the end.

A claim is the folder itself, made with one atomic `mkdir`, plus an exclusive `flock` on a hidden lock file
beside it (`.NAME.lock`) held for the whole run. The finished results are staged in a hidden folder
(`.NAME.staging-PID-XXXX`) and renamed onto the claimed, still empty, folder. The kernel drops the lock of
a killed process, so a claim nobody holds is stale: the next run in that results folder removes its empty
folder, staging folder and lock file, and an explicit --run-id may take it over.

Checked here, before anything is sent: the results folder is a directory (or can be made) and writable, and no
symbolic link sits where the run folder or its lock will be: nothing is ever written through a link, which could
lead out of the results folder (the lock is opened with O_NOFOLLOW, the folder checked with lstat).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
from pathlib import Path

from harness.types import HarnessError

try:
    import fcntl
except ImportError:  # not POSIX: claims still use mkdir, but a stale claim cannot be told from a live one
    fcntl = None  # type: ignore[assignment]

_LOCK, _STAGING = ".lock", ".staging-"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)  # a link at the lock's path is refused, never followed


class Claim:
    """`final` is ours until publish() or abandon()."""

    def __init__(self, results_dir: Path, name: str, fd: int | None, created: list[Path]) -> None:
        self.results_dir, self.name, self._fd, self._created = results_dir, name, fd, created
        self.final = results_dir / name
        self._staging: list[Path] = []

    @property
    def lock_path(self) -> Path:
        return self.results_dir / f".{self.name}{_LOCK}"

    def staging(self) -> Path:
        """A new hidden folder to stage the results in (made with the user's umask, like any folder)."""
        path = self.results_dir / f".{self.name}{_STAGING}{os.getpid()}-{secrets.token_hex(4)}"
        path.mkdir()
        self._staging.append(path)
        return path

    def publish(self, staging: Path) -> Path:
        """Rename the staged folder onto the claimed one (empty, so rename replaces it atomically)."""
        os.rename(staging, self.final)
        self._staging.remove(staging)
        self._release()
        return self.final

    def abandon(self) -> None:
        """Nothing to keep (bad input, nothing answered, an interrupt): leave no trace of this run."""
        for path in self._staging:
            shutil.rmtree(path, ignore_errors=True)
        self._staging.clear()
        with contextlib.suppress(OSError):
            self.final.rmdir()  # only if still empty
        self._release()
        for d in self._created:  # folders this claim made, deepest first, if nothing else went in
            with contextlib.suppress(OSError):
                d.rmdir()

    def _release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                self.lock_path.unlink()  # unlinked while still locked: see _lock
            os.close(self._fd)
            self._fd = None


def claim(results_dir: Path, name: str, explicit: bool, rescore: str = "") -> Claim:
    """Claim `results_dir/name`, else (not explicit) the first free `name-2`, `name-3`, ...; an explicit
    name (--run-id) that a finished or running run holds is refused. `rescore`: what the refusal of a finished
    run adds (the runner's: a new --run-id is scored from the response cache, where the cache is on)."""
    if not name or name.startswith(".") or "/" in name or os.sep in name or "\0" in name:
        raise HarnessError(f"run id {name!r}: a folder name is needed (no '/', not starting with '.')")
    created = _make_dir(results_dir)
    clean_stale(results_dir)
    n, candidate = 1, name
    while True:
        fd = _take(results_dir, candidate)
        if fd is not False:
            return Claim(results_dir, candidate, fd, created)
        if explicit:
            for d in created:
                with contextlib.suppress(OSError):
                    d.rmdir()
            final = results_dir / name
            busy = final.is_dir() and not any(final.iterdir())  # claimed by a run still going
            why = "is being written by another run" if busy else "already exists"
            raise HarnessError(f"{final} {why}: choose another --run-id" + ("" if busy or not rescore else rescore))
        n += 1
        candidate = f"{name}-{n}"


def _make_dir(results_dir: Path) -> list[Path]:
    """Make the results folder (returning the folders made, deepest first); one line if it cannot be used."""
    missing = [p for p in [results_dir, *results_dir.parents] if not p.exists()]
    try:
        results_dir.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise HarnessError(f"--results-dir {results_dir} is a file, not a folder") from None
    except NotADirectoryError:
        raise HarnessError(f"--results-dir {results_dir}: a part of that path is a file, not a folder") from None
    except OSError as e:
        raise HarnessError(f"cannot create --results-dir {results_dir}: {e.strerror}") from None
    if not results_dir.is_dir():
        raise HarnessError(f"--results-dir {results_dir} is a file, not a folder")
    if not os.access(results_dir, os.W_OK | os.X_OK):
        raise HarnessError(f"--results-dir {results_dir} is not writable")
    return missing


def _lock(path: Path, create: bool) -> int | bool | None:
    """An fd holding an exclusive lock on the file now at `path`; False if a live process holds it; None
    where flock is unavailable. The inode check catches a lock file unlinked and remade meanwhile."""
    if fcntl is None:
        return None
    while True:
        try:
            fd = os.open(path, os.O_RDWR | _NOFOLLOW | (os.O_CREAT if create else 0), 0o666)
        except FileNotFoundError:
            return False
        except OSError as e:
            if e.errno == errno.ELOOP or path.is_symlink():
                raise _linked(path) from None
            raise
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)
        if not create:
            return False


def _take(results_dir: Path, name: str) -> int | bool | None:
    """Try to claim one name: the lock, then the folder (new, or the empty folder of a dead run)."""
    final = results_dir / name
    if final.is_symlink():
        raise _linked(final)
    try:
        fd = _lock(results_dir / f".{name}{_LOCK}", create=True)
    except OSError as e:
        if e.errno == errno.ENAMETOOLONG:
            raise HarnessError(f"run id {name[:40]!r}... is too long for a folder name: shorten it") from None
        raise HarnessError(f"cannot write in --results-dir {results_dir}: {e.strerror}") from None
    if fd is False:
        return False
    try:
        final.mkdir()
        return fd
    except FileExistsError:
        if final.is_symlink():  # planted since the check above
            _close(results_dir, name, fd)
            raise _linked(final) from None
        stale = fcntl is not None and final.is_dir() and not any(final.iterdir())
        if stale:
            return fd  # a killed run's empty claim: nobody holds its lock
    except OSError as e:
        raise HarnessError(f"cannot create the run folder {final}: {e.strerror}") from None
    _close(results_dir, name, fd)
    return False


def _close(results_dir: Path, name: str, fd: int | None) -> None:
    if isinstance(fd, int):
        with contextlib.suppress(OSError):
            (results_dir / f".{name}{_LOCK}").unlink()
        os.close(fd)


def _linked(path: Path) -> HarnessError:
    return HarnessError(
        f"{path} is a symbolic link: the harness writes nothing through links in the results folder; "
        "remove it or choose another --results-dir"
    )


def clean_stale(results_dir: Path) -> list[Path]:
    """Remove what killed runs left: staging folders, empty claimed folders and lock files nobody holds."""
    removed: list[Path] = []
    if fcntl is None:
        return removed
    try:
        entries = [e for e in results_dir.iterdir() if e.name.startswith(".") and not e.is_symlink()]
    except OSError:
        return removed
    names = {e.name[1 : -len(_LOCK)] for e in entries if e.name.endswith(_LOCK)}
    names |= {e.name[1:].rsplit(_STAGING, 1)[0] for e in entries if _STAGING in e.name and e.is_dir()}
    for name in sorted(names):
        lock = results_dir / f".{name}{_LOCK}"
        fd = _lock(lock, create=False) if lock.exists() and not lock.is_symlink() else None
        if fd is False:
            continue  # a live run holds it
        for e in entries:
            if e.name.startswith(f".{name}{_STAGING}") and e.is_dir():
                shutil.rmtree(e, ignore_errors=True)
                removed.append(e)
        with contextlib.suppress(OSError):
            (results_dir / name).rmdir()  # only an empty (claimed, never filled) folder
            removed.append(results_dir / name)
        if isinstance(fd, int):
            with contextlib.suppress(OSError):
                lock.unlink()
                removed.append(lock)
            os.close(fd)
    return removed
