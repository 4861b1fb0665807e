"""The response cache's SQLite file: whose it is, what a row may hold, and why a write failed.

The cache and the batch records (harness/calling/batch/store.py) share one file. Before either changes it,
`check_ours` refuses a file that some other program made (tables that are not ours): a mistyped --cache must not
gain our tables, a WAL journal or rows inside another application's database.

SQLite keeps TEXT as UTF-8, but a reply's text may hold what UTF-8 cannot: a lone surrogate ("\\ud800" escaped
in the server's JSON decodes to one). `stored_text` keeps such a text as its JSON string literal (ASCII) and the
row's meta says so ("text": "json"); reading the row reverses it. Every other text (NUL and control characters
included) is stored as it is.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

from harness.inputs import disk_full
from harness.types import HarnessError

RESPONSE_COLUMNS = frozenset({"key", "text", "input_tokens", "output_tokens", "backend", "model", "created"})
# Every table and index the cache and the batch records make (cache.py, batch/store.py _SCHEMA), with its columns:
# a file is ours only when each of its tables is one of these with exactly these columns (`meta` came later).
OUR_SCHEMA: dict[str, tuple[frozenset[str], ...]] = {
    "responses": (RESPONSE_COLUMNS, RESPONSE_COLUMNS | {"meta"}),
    "batches": (
        frozenset(
            {
                "local_id",
                "provider",
                "model",
                "base_url",
                "stage",
                "batch_id",
                "input_file_id",
                "status",
                "total",
                "done",
                "failed",
                "pid",
                "host",
                "created",
                "updated",
                "create_sent",
                "note",
            }
        ),
    ),
    "batch_requests": (frozenset({"local_id", "key", "state", "error", "updated"}),),
}
OUR_TABLES = frozenset(OUR_SCHEMA)
OUR_INDEXES = frozenset({"batch_requests_key"})
JSON_TEXT = "json"  # meta["text"]: the text column holds json.dumps(text)


def check_ours(db: sqlite3.Connection, path: Path) -> None:
    """HarnessError (read only, nothing changed) unless the file is empty or its whole schema is ours: only our
    tables, each with exactly our columns, and no index, view or trigger of another program's. A table that
    merely borrows one of our names (another program's `batches`) makes the file foreign too."""
    objects = db.execute(
        "SELECT type, name, tbl_name FROM sqlite_master WHERE substr(name, 1, 7) != 'sqlite_'"
    ).fetchall()
    foreign: list[str] = []
    for kind, name, table in objects:
        if kind == "table" and name in OUR_SCHEMA:
            columns = frozenset(row[1] for row in db.execute(f'PRAGMA table_info("{name}")'))
            ours = columns in OUR_SCHEMA[name]
        else:
            ours = kind == "index" and name in OUR_INDEXES and table in OUR_TABLES
        if not ours:
            foreign.append(name if kind == "table" else f"{kind} {name}")
    if foreign:
        foreign.sort()
        shown = ", ".join(foreign[:5]) + (", ..." if len(foreign) > 5 else "")
        raise HarnessError(
            f"{path} is an SQLite database of another program (its tables {shown} are not a response cache's); "
            "it was left unchanged: give --cache a new file (or the cache.sqlite of a results folder)"
        )


def stored_text(text: str) -> tuple[str, bool]:
    """The text as the row keeps it, and whether it is JSON-escaped (only when UTF-8 cannot hold it)."""
    if text.isascii():
        return text, False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(text), True  # ensure_ascii: a lone surrogate becomes the six characters \ud800
    return text, False


def loaded_text(stored: str, meta: dict[str, object]) -> str:
    """The reply's text as it came, from a row written by `stored_text`."""
    return str(json.loads(stored)) if meta.get("text") == JSON_TEXT else stored


def plain(value: str) -> str:
    """A label (a model name, an error message) as UTF-8 can hold it: unencodable characters backslash-escaped."""
    if value.isascii():
        return value
    return value.encode("utf-8", "backslashreplace").decode("utf-8")


LOW_SPACE = 1 << 20  # bytes: below this, an I/O error of SQLite's is the disk's being full


def full(path: Path, error: BaseException) -> bool:
    """Whether a failed write met a full disk. SQLite says SQLITE_FULL when a page does not fit, but a WAL index
    (-shm) that cannot grow is a bare I/O error: that one counts when the disk has almost no space left."""
    if disk_full(error):
        return True
    if not isinstance(error, sqlite3.Error) or (getattr(error, "sqlite_errorcode", 0) or 0) & 0xFF != 10:
        return False  # 10: SQLITE_IOERR, whose extended codes keep it in the low byte
    try:
        stats = os.statvfs(path.parent)
    except OSError:
        return False
    return stats.f_bavail * stats.f_frsize < LOW_SPACE


def problem(path: Path, error: BaseException) -> str:
    """Why a write to the cache file failed, in words: a full disk is named as one, never as a lock."""
    if full(path, error):
        return f"the disk holding {path} is full ({error})"
    if isinstance(error, sqlite3.OperationalError) and "locked" in str(error):
        return f"the cache file {path} stayed locked by another process"
    return f"the cache file {path} could not be written ({type(error).__name__}: {error})"
