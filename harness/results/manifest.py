"""manifest.json: what a reader needs to tell a run folder as written from one altered since.

Written last into the staging folder, so it is renamed into place with the files it describes (results/write.py):
each file's size and sha256, and samples.jsonl's line count. Every reader checks a folder against it
(results/read.py load_run): a deleted or edited line, an emptied or cut file, an edited metrics.json all show as
"altered"; a folder written before manifests existed is "unverified" (checked only for what its config.json and
metrics.json say: the number of queries). The sha256 of samples.jsonl also tells copies of one run apart from
runs (reporting/report.py collapses them).
"""

from __future__ import annotations

import errno
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.inputs import read_bytes
from harness.types import HarnessError

MANIFEST = "manifest.json"
SAMPLES = "samples.jsonl"
FORMAT = 1
# The most a reader takes of one run file (issue 41): a JSON file the harness writes is kilobytes (a run's
# metrics.json with every setting's CIs well under 1 MiB); samples.jsonl holds one line per query, each reply
# capped at 1 MB (calling/backends/base.py REPLY_CAP_BYTES), and runs of tens of thousands of queries stay far below.
MAX_JSON_BYTES = 64 * 2**20
MAX_SAMPLES_BYTES = 2 * 2**30

VERIFIED, UNVERIFIED, ALTERED = "verified", "unverified", "altered"


@dataclass(frozen=True)
class Integrity:
    """How a run folder compares with what was written: VERIFIED, UNVERIFIED (no manifest) or ALTERED, with why."""

    status: str = VERIFIED
    why: str = ""
    samples_sha256: str = ""  # of samples.jsonl as read ("" for a run not read from disk)


AS_WRITTEN = Integrity()  # a run the runner just wrote, held in memory (results/read.py written_run)


def file_record(data: bytes, name: str) -> dict[str, Any]:
    record: dict[str, Any] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    if name.endswith(".jsonl"):
        record["lines"] = data.count(b"\n")
    return record


def read_run_file(folder: Path, name: str, limit: int | None = None) -> bytes:
    """A run file's bytes: only a plain name inside `folder` (a manifest that names "/dev/zero" or "../x" names no
    file of the run), read as harness/inputs.py reads a user's files: a FIFO, a device or a socket there is refused,
    never waited on (issue 30: `report` and `compare` hung on a FIFO at manifest.json), and a file over `limit`
    bytes is refused unread (issue 41). Failures are OSErrors."""
    if not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name:
        raise OSError(errno.EINVAL, f"{name!r} is not a file name inside {folder}")
    try:
        return read_bytes(folder / name, "run file", MAX_SAMPLES_BYTES if limit is None else limit)
    except HarnessError as e:
        raise OSError(errno.EINVAL, str(e)) from None


def read_run_json(folder: Path, name: str) -> Any:
    """A run file's JSON (read_run_file, at most MAX_JSON_BYTES); ValueError when it is not JSON or is nested
    deeper than the decoder reads."""
    data = read_run_file(folder, name, MAX_JSON_BYTES)
    try:
        return json.loads(data.decode("utf-8"))
    except RecursionError:
        raise ValueError(f"{folder / name} is nested deeper than the JSON decoder reads") from None


def write_manifest(folder: Path) -> None:
    """Describe every file now in `folder` (a staging folder, complete but for this file) in manifest.json."""
    names = sorted(p.name for p in folder.iterdir() if p.is_file() and p.name != MANIFEST)
    files = {name: file_record((folder / name).read_bytes(), name) for name in names}
    text = json.dumps({"format": FORMAT, "files": files}, indent=2) + "\n"
    (folder / MANIFEST).write_text(text, encoding="utf-8")


def check(run_dir: Path, samples: bytes, config: dict[str, Any]) -> Integrity:
    """The folder's files against its manifest; `samples`: samples.jsonl's bytes as the reader parsed them."""
    digest = hashlib.sha256(samples).hexdigest()
    lines = samples.count(b"\n")
    path = run_dir / MANIFEST
    if not path.exists():  # an older version's folder: only its line count can be checked, against config.json
        expected = config.get("n_queries")
        if isinstance(expected, int) and expected != lines:
            return Integrity(ALTERED, f"{SAMPLES} holds {lines:,} lines for {expected:,} queries", digest)
        return Integrity(UNVERIFIED, "written without a manifest (an older version): not verified", digest)
    try:
        files = read_run_json(run_dir, MANIFEST)["files"]
        written = files[SAMPLES]
        if not all(isinstance(record, dict) for record in files.values()):
            raise TypeError("a file's record is no JSON object")
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return Integrity(ALTERED, f"{MANIFEST} is unreadable", digest)
    if written.get("sha256") != digest:
        was = written.get("lines")
        counts = f"{lines:,} lines, {was:,} written" if isinstance(was, int) and was != lines else "same line count"
        return Integrity(ALTERED, f"{SAMPLES} changed since it was written ({counts})", digest)
    why = _changed(run_dir, {name: r for name, r in files.items() if name != SAMPLES})
    return Integrity(ALTERED, why, digest) if why else Integrity(VERIFIED, "", digest)


def check_folder(folder: Path) -> Integrity:
    """A folder of files derived from a run (`run_eval.py errors`' output), written with a manifest.json of its own
    and holding no samples.jsonl, against that manifest (files added beside them later are not its concern)."""
    path = folder / MANIFEST
    if not path.exists():
        return Integrity(UNVERIFIED, f"{folder.name} has no {MANIFEST}: not verified")
    try:
        files = read_run_json(folder, MANIFEST)["files"]
        if not isinstance(files, dict) or not all(isinstance(record, dict) for record in files.values()):
            raise TypeError("no file records")
    except (OSError, ValueError, KeyError, TypeError):
        return Integrity(ALTERED, f"{folder.name}/{MANIFEST} is unreadable")
    why = _changed(folder, files)
    return Integrity(ALTERED, f"{folder.name}/{why}") if why else Integrity(VERIFIED)


def _changed(folder: Path, files: dict[str, Any]) -> str:
    """Why the first of `files` (name -> its manifest record) differs from what was written; "" when none does."""
    for name, record in files.items():
        try:
            data = read_run_file(folder, name)
        except OSError:
            return f"{name} is missing or unreadable"
        if hashlib.sha256(data).hexdigest() != record.get("sha256"):
            return f"{name} changed since it was written"
    return ""
