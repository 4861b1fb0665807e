"""Where submitted batches are remembered: two tables in the response cache's SQLite file.

A batch moves through stages, each committed before the step that depends on it, so `kill -9` anywhere
leaves a record that says what may have reached the provider:

    planned   its requests are claimed here (no other run submits them); nothing sent yet
    uploaded  OpenAI: the input file is uploaded (its id kept); no batch created yet
    creating  the create call is on its way: the provider may hold a batch we have no id for
    submitted the provider's batch id is kept: poll it, never submit its requests again
    collected its results are in the cache (answers) and in `batch_requests` (per-request errors, and for an
              answered request that the result file named more than once with different outcomes, that
              conflict: the answer kept is the first in the file, harness/calling/batch/collect.py)

A stage left behind by a dead process is recovered by the next run (harness/calling/batch/flow.py): planned and
uploaded are dropped (nothing was created), creating is looked up at the provider. Like the cache, the
tables hold hashes (cache keys double as custom_ids), ids and counts: no prompts, no keys.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.calling.cache import BUSY_TIMEOUT_MS
from harness.calling.cache_file import check_ours, plain, problem
from harness.types import HarnessError

STAGES = ("planned", "uploaded", "creating", "submitted", "collected")
OPEN_STAGES = ("planned", "uploaded", "creating", "submitted")
STALE_SECONDS = 3600.0  # a claim not touched for this long is abandoned even if its process id is alive
# Local ids claimed by this process (any BatchStore in it): its own claims are never "abandoned".
_CLAIMED_HERE: set[str] = set()
Conflicts = dict[str, str] | None
_CHUNK = 500  # keys per `IN (...)` query (SQLite's variable limit is far above; this keeps statements small)

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS batches ("
    " local_id TEXT PRIMARY KEY, provider TEXT NOT NULL, model TEXT NOT NULL, base_url TEXT NOT NULL,"
    " stage TEXT NOT NULL, batch_id TEXT, input_file_id TEXT, status TEXT,"
    " total INTEGER NOT NULL, done INTEGER NOT NULL DEFAULT 0, failed INTEGER NOT NULL DEFAULT 0,"
    " pid INTEGER NOT NULL, host TEXT NOT NULL, created REAL NOT NULL, updated REAL NOT NULL,"
    " create_sent REAL, note TEXT)",
    "CREATE TABLE IF NOT EXISTS batch_requests ("
    " local_id TEXT NOT NULL, key TEXT NOT NULL, state TEXT NOT NULL, error TEXT, updated REAL NOT NULL,"
    " PRIMARY KEY (local_id, key))",
    "CREATE INDEX IF NOT EXISTS batch_requests_key ON batch_requests (key)",
)


@dataclass(frozen=True)
class BatchRow:
    local_id: str
    provider: str
    model: str
    base_url: str
    stage: str
    batch_id: str | None
    input_file_id: str | None
    status: str | None
    total: int
    done: int
    failed: int
    pid: int
    host: str
    created: float
    updated: float
    create_sent: float | None
    note: str | None


class BatchStore:
    """The batches and their requests, beside the cached answers (same file, own connection)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
            self._db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            check_ours(self._db, path)  # another program's database is refused before anything changes it
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA synchronous = NORMAL")
            for statement in _SCHEMA:
                self._db.execute(statement)
        except sqlite3.Error as e:
            raise HarnessError(f"cannot open the batch records: {problem(path, e)}") from e

    def close(self) -> None:
        self._db.close()

    # --- claiming requests -------------------------------------------------------------------------

    def in_flight(self, keys: Iterable[str]) -> dict[str, str]:
        """key -> local id of the open batch that holds it."""
        found: dict[str, str] = {}
        for chunk in _chunks(list(keys)):
            rows = self._db.execute(
                "SELECT r.key, r.local_id FROM batch_requests r JOIN batches b USING (local_id)"
                f" WHERE r.state = 'pending' AND b.stage IN {OPEN_STAGES} AND r.key IN ({_marks(chunk)})",
                chunk,
            )
            found.update(rows)
        return found

    def settled_since(self, keys: Iterable[str], since: float) -> dict[str, str | None]:
        """key -> None (answered) or its error, for requests whose batch result came in at or after `since`."""
        found: dict[str, str | None] = {}
        for chunk in _chunks(list(keys)):
            rows = self._db.execute(
                "SELECT key, state, error FROM batch_requests WHERE state IN ('done', 'failed')"
                f" AND updated >= ? AND key IN ({_marks(chunk)}) ORDER BY updated",
                [since, *chunk],
            )
            for key, state, error in rows:  # the latest outcome wins
                found[key] = None if state == "done" else (error or "failed in a batch")
        return found

    def answered(self, keys: Iterable[str]) -> set[str]:
        """Keys whose answer came from a batch (billed at the batch price)."""
        found: set[str] = set()
        for chunk in _chunks(list(keys)):
            rows = self._db.execute(
                f"SELECT DISTINCT key FROM batch_requests WHERE state = 'done' AND key IN ({_marks(chunk)})", chunk
            )
            found.update(k for (k,) in rows)
        return found

    def claim(self, provider: str, model: str, base_urls: Sequence[str], chunks: Sequence[Sequence[str]]) -> list[str]:
        """Record planned batches for these key chunks (dropping keys another run holds); their local ids.

        One write transaction: two runs sharing the cache never claim the same request.
        """
        now, ids = time.time(), []
        self._db.execute("BEGIN IMMEDIATE")
        try:
            for i, chunk in enumerate(chunks):
                held = self.in_flight(chunk)
                keys = [k for k in chunk if k not in held]
                if not keys:
                    continue
                local_id = uuid.uuid4().hex
                self._db.execute(
                    "INSERT INTO batches (local_id, provider, model, base_url, stage, total, pid, host, created,"
                    " updated) VALUES (?, ?, ?, ?, 'planned', ?, ?, ?, ?, ?)",
                    (
                        local_id,
                        provider,
                        model,
                        base_urls[i % len(base_urls)],
                        len(keys),
                        os.getpid(),
                        _host(),
                        now,
                        now,
                    ),
                )
                self._db.executemany(
                    "INSERT INTO batch_requests VALUES (?, ?, 'pending', NULL, ?)", [(local_id, k, now) for k in keys]
                )
                ids.append(local_id)
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        _CLAIMED_HERE.update(ids)
        return ids

    # --- moving a batch through its stages ---------------------------------------------------------

    def set_stage(self, local_id: str, stage: str, **fields: object) -> None:
        assert stage in STAGES and set(fields) <= {"batch_id", "input_file_id", "create_sent", "status", "note"}
        sets = "".join(f", {name} = ?" for name in fields)
        self._db.execute(
            f"UPDATE batches SET stage = ?, updated = ?{sets} WHERE local_id = ?",
            (stage, time.time(), *(plain(v) if isinstance(v, str) else v for v in fields.values()), local_id),
        )

    def set_status(self, local_id: str, status: str, done: int, failed: int) -> None:
        self._db.execute(
            "UPDATE batches SET status = ?, done = ?, failed = ?, updated = ? WHERE local_id = ?",
            (plain(status), done, failed, time.time(), local_id),
        )

    def drop(self, local_id: str) -> None:
        """Forget a batch that never reached the provider: its requests are free to be claimed again."""
        self._db.execute("BEGIN IMMEDIATE")
        self._db.execute("DELETE FROM batch_requests WHERE local_id = ?", (local_id,))
        self._db.execute("DELETE FROM batches WHERE local_id = ?", (local_id,))
        self._db.execute("COMMIT")
        _CLAIMED_HERE.discard(local_id)

    def collect(
        self, local_id: str, status: str, errors: dict[str, str], note: str | None = None, conflicts: Conflicts = None
    ) -> tuple[int, int]:
        """Close a batch: requests named in `errors` failed, the rest were answered (already in the cache);
        `conflicts`: answered requests the result file named again with another outcome, and what it said.

        Returns (answered, failed)."""
        now = time.time()
        keys = self.keys(local_id)
        # Messages and notes may quote a server's text, which UTF-8 may not hold (a lone surrogate): escaped.
        failed = [(plain(errors[k]), now, local_id, k) for k in keys if k in errors]
        noted = [(plain(why), local_id, k) for k, why in (conflicts or {}).items() if k not in errors]
        try:
            self._db.execute("BEGIN IMMEDIATE")
            done = "UPDATE batch_requests SET state = 'done', error = NULL, updated = ? WHERE local_id = ?"
            self._db.execute(done, (now, local_id))
            self._db.executemany(
                "UPDATE batch_requests SET state = 'failed', error = ?, updated = ? WHERE local_id = ? AND key = ?",
                failed,
            )
            self._db.executemany("UPDATE batch_requests SET error = ? WHERE local_id = ? AND key = ?", noted)
            self._db.execute(
                "UPDATE batches SET stage = 'collected', status = ?, done = ?, failed = ?, updated = ?, note = ?"
                " WHERE local_id = ?",
                (plain(status), len(keys) - len(failed), len(failed), now, note and plain(note), local_id),
            )
            self._db.execute("COMMIT")
        except BaseException:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise
        return len(keys) - len(failed), len(failed)

    # --- reading -----------------------------------------------------------------------------------

    def keys(self, local_id: str) -> list[str]:
        return [k for (k,) in self._db.execute("SELECT key FROM batch_requests WHERE local_id = ?", (local_id,))]

    def row(self, local_id: str) -> BatchRow:
        rows = self.rows("WHERE local_id = ?", (local_id,))
        if not rows:
            raise KeyError(local_id)
        return rows[0]

    def rows(self, where: str = "", params: Sequence[object] = ()) -> list[BatchRow]:
        columns = ", ".join(BatchRow.__dataclass_fields__)
        query = f"SELECT {columns} FROM batches {where} ORDER BY created"
        return [BatchRow(*r) for r in self._db.execute(query, tuple(params))]

    def conflicts(self, keys: Iterable[str]) -> dict[str, str]:
        """key -> what its batch's result file said that disagreed with the answer kept (answered keys only)."""
        found: dict[str, str] = {}
        for chunk in _chunks(list(keys)):
            found.update(
                self._db.execute(
                    "SELECT key, error FROM batch_requests WHERE state = 'done' AND error IS NOT NULL"
                    f" AND key IN ({_marks(chunk)}) ORDER BY updated",
                    chunk,
                )
            )
        return found

    def known_batch_ids(self) -> set[str]:
        return {b for (b,) in self._db.execute("SELECT batch_id FROM batches WHERE batch_id IS NOT NULL")}

    def release(self, local_id: str) -> None:
        """Leave a claim for the next run to resolve (this process could not tell what the provider holds)."""
        _CLAIMED_HERE.discard(local_id)

    def abandoned(self, row: BatchRow) -> bool:
        """Whether an unfinished claim's process is gone (killed), so this run must take it over."""
        if row.local_id in _CLAIMED_HERE:
            return False
        if time.time() - row.updated > STALE_SECONDS or row.pid == os.getpid():
            return True  # our own pid on a row we did not make: a previous process that had the same id
        return row.host == _host() and not _alive(row.pid)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


def _host() -> str:
    return socket.gethostname()


def _chunks(keys: list[str]) -> Iterable[list[str]]:
    for i in range(0, len(keys), _CHUNK):
        yield keys[i : i + _CHUNK]


def _marks(chunk: Sequence[str]) -> str:
    return ", ".join("?" * len(chunk))
