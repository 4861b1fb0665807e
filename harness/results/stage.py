"""Folders written whole or not at all: staged in a hidden folder beside the target, then renamed into place.

The one staging helper of the harness: run folders (results/write.py), sweep folders (sweep.py) and report
folders (reporting/report.py) are all written through `staged`, so a crash mid-write leaves no half folder, and a
full disk is one line naming the folder (not a traceback).
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

__all__ = ["staged", "umask"]


def umask() -> int:
    """The process's file-creation mask (read without changing it where Linux allows)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
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
    """Rename staging onto target; an old folder there is moved aside first and removed after."""
    if not target.exists():
        os.rename(staging, target)
        return
    old = target.with_name(f".{target.name}.old")
    os.rename(target, old)
    os.rename(staging, target)
    shutil.rmtree(old, ignore_errors=True)
