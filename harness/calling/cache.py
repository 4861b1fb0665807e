"""Response cache in SQLite: finished answers are looked up first, so a request is never paid for twice.

One row per answered request, committed as it arrives (WAL), so a run killed with `kill -9` keeps every
answer it received. Errors are never stored: a rerun retries exactly the requests that failed. Two runs
may share one file. The file is created with the first answer, so a run that got none leaves no file.

Another process may hold the write lock (a long transaction, a sync tool). A write never stalls the event
loop: it waits at most `INLINE_WAIT_MS`, and if the file is still locked the answer joins a backlog that a
background thread writes, waiting up to `BUSY_TIMEOUT_MS` per try. Whatever is still unwritten when the run
ends stays in memory for the run's results; `unsaved` counts it, and the run says so (metrics.json, stderr).

A full disk is not a lock: `disk_full` says so (dispatch stops sending). Reply text is stored losslessly
(cache_file.py); a row SQLite refuses is left out of its transaction alone, never taking its neighbours down.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from harness.calling.cache_file import JSON_TEXT, check_ours, full, loaded_text, plain, problem, stored_text
from harness.types import Completion, HarnessError, Usage

BUSY_TIMEOUT_MS = 30_000
# The most a write may wait inside the event loop: enough for another run's own short write transactions,
# far too short to stall the requests in flight; a longer lock sends the answer to the backlog.
INLINE_WAIT_MS = 50
_COLUMNS = "key, text, input_tokens, output_tokens, backend, model, created, meta"
_Row = tuple[str, str, int, int, str, str, float, str]
_INSERT = f"INSERT OR REPLACE INTO responses ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
# What a row's values (not the file) can make SQLite's binding raise; UnicodeEncodeError is a ValueError.
_ROW_ERRORS = (ValueError, TypeError, OverflowError, sqlite3.InterfaceError, sqlite3.DataError, sqlite3.IntegrityError)


def _marks(values: list[str]) -> str:
    return ",".join("?" * len(values))


def _completion(request_id: str, row: tuple[str, int, int, str | None]) -> Completion:
    """A stored row (text, input_tokens, output_tokens, meta) as the Completion it was."""
    text, input_tokens, output_tokens, stored = row
    meta = json.loads(stored) if stored else {}
    return Completion(
        request_id,
        loaded_text(text, meta),
        usage=Usage(input_tokens, output_tokens, meta.get("reasoning_tokens", 0)),
        cached=True,
        finish_reason=meta.get("finish_reason"),
        refusal=meta.get("refusal"),
        served_model=meta.get("served_model"),
        truncated=bool(meta.get("truncated", False)),
        score_probs=meta.get("score_probs"),  # --scoring expected
        reasoning=meta.get("reasoning"),  # a thought returned beside the answer
        malformed=meta.get("malformed"),
        raw=meta.get("raw"),  # a paid reply that could not be read (reading.py)
    )


def _connect(path: Path, timeout_ms: int) -> sqlite3.Connection:
    """A connection in autocommit mode with the table in place (created, or given the newer `meta` column)."""
    db = sqlite3.connect(path, timeout=timeout_ms / 1000, isolation_level=None, check_same_thread=False)
    try:
        db.execute(f"PRAGMA busy_timeout = {timeout_ms}")
        check_ours(db, path)  # before anything below changes the file
        if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            db.execute("PRAGMA journal_mode = WAL")
        # NORMAL in WAL mode: a committed row survives the process being killed (not a power cut).
        db.execute("PRAGMA synchronous = NORMAL")
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "responses" not in tables:
            db.execute(
                "CREATE TABLE IF NOT EXISTS responses ("
                " key TEXT PRIMARY KEY, text TEXT NOT NULL, input_tokens INTEGER NOT NULL,"
                " output_tokens INTEGER NOT NULL, backend TEXT NOT NULL, model TEXT NOT NULL,"
                " created REAL NOT NULL, meta TEXT)"
            )
        elif "meta" not in {r[1] for r in db.execute("PRAGMA table_info(responses)")}:
            db.execute("ALTER TABLE responses ADD COLUMN meta TEXT")  # a file from before finish_reason was kept
    except BaseException:
        db.close()
        raise
    return db


def _insert(db: sqlite3.Connection, rows: list[_Row]) -> list[_Row]:
    """Commit rows in one transaction; the rows SQLite refused for their values are left out and returned. An
    error of the file itself (a lock, a full disk) rolls the whole transaction back and is raised."""
    if len(rows) == 1:  # autocommit: one statement is its own transaction
        try:
            db.execute(_INSERT, rows[0])
        except _ROW_ERRORS:
            return rows
        return []
    refused: list[_Row] = []
    try:
        db.execute("BEGIN IMMEDIATE")
        try:
            db.executemany(_INSERT, rows)
        except _ROW_ERRORS:  # one bad row: the rows before it are in the transaction; redo them one by one
            for row in rows:
                try:
                    db.execute(_INSERT, row)
                except _ROW_ERRORS:
                    refused.append(row)
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    return refused


class ResponseCache:
    """Key -> (text, usage, finish reason, refusal, served model). Holds no prompts and no secrets: keys are hashes."""

    def __init__(self, path: Path, busy_timeout_ms: int | None = None) -> None:
        self.path = path
        self.busy_timeout_ms = BUSY_TIMEOUT_MS if busy_timeout_ms is None else busy_timeout_ms
        self.unsaved = 0  # answers that could not be written by close(): kept in memory only
        self.deferred = 0  # answers that met a locked file and went through the backlog
        self.refused = 0  # answers SQLite would not take (kept in memory, counted in `unsaved`)
        self.problem: str | None = None  # why answers were deferred or refused, in words
        self.disk_full: str | None = None  # set when a write met a full disk: the run must stop sending
        self._db: sqlite3.Connection | None = None
        self._inline = False  # the connection's busy timeout is INLINE_WAIT_MS (set at the first write)
        self._pending: list[_Row] = []  # answers put in this event-loop turn, committed at the next (`flush`)
        self._backlog: list[_Row] = []
        self._lock = threading.Lock()
        self._flusher: threading.Thread | None = None
        self._closing = threading.Event()
        if path.exists():
            self._open()
        else:
            # Created with the first answer; fail now, before any request, if it never could be.
            parent = next((p for p in [path.parent, *path.parent.parents] if p.exists()), None)
            if path.is_dir() or parent is None or not parent.is_dir():
                raise HarnessError(f"cannot create the response cache {path}: not a writable location")

    def _open(self) -> sqlite3.Connection:
        if self._db is None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._db = _connect(self.path, self.busy_timeout_ms)
            except (sqlite3.Error, OSError) as e:
                raise HarnessError(f"cannot open the response cache: {problem(self.path, e)}") from e
        return self._db

    def get(self, key: str, request_id: str) -> Completion | None:
        """The stored answer for `key`, as a Completion for `request_id`, or None. Called before any request."""
        return self.get_many({request_id: key}).get(request_id)

    def get_many(self, keys: Mapping[str, str]) -> dict[str, Completion]:
        """{request id: its stored answer} for the ids (keys: id -> key) that have one, a query per 500 keys (a
        query per key cost a run ~20 % of its dispatch CPU, issue 12). Called before any request."""
        if not keys or (self._db is None and not self.path.exists()):
            return {}
        if self._inline and self._db is not None:  # a read waits as long as it must (see below)
            self._db.execute(f"PRAGMA busy_timeout = {self.busy_timeout_ms}")
            self._inline = False
        ids: dict[str, list[str]] = {}
        for request_id, key in keys.items():
            ids.setdefault(key, []).append(request_id)
        wanted = list(ids)
        found: dict[str, tuple[str, int, int, str | None]] = {}
        try:
            db = self._open()
            for i in range(0, len(wanted), 500):  # within any SQLite's limit on bound parameters (999)
                chunk = wanted[i : i + 500]
                query = (
                    f"SELECT key, text, input_tokens, output_tokens, meta FROM responses WHERE key IN ({_marks(chunk)})"
                )
                found.update((row[0], row[1:]) for row in db.execute(query, chunk))
        except sqlite3.Error as e:  # locked past the busy timeout: sending again would pay twice
            raise HarnessError(f"cannot read the response cache {self.path}: {e}; nothing was sent") from e
        return {request_id: _completion(request_id, row) for key, row in found.items() for request_id in ids[key]}

    def put(self, key: str, completion: Completion, backend: str, model: str) -> None:
        """Store one answer, committed at once unless the file is locked (then the backlog takes it).
        Errors are refused: they must be retried, not replayed."""
        if completion.error is not None or completion.text is None:
            raise ValueError("errors are never cached")
        u, c = completion.usage, completion
        meta: dict[str, object] = {
            "finish_reason": c.finish_reason,
            "refusal": c.refusal,
            "served_model": c.served_model,
        }
        meta |= {"truncated": True} if c.truncated else {}
        meta |= {"score_probs": dict(c.score_probs)} if c.score_probs is not None else {}
        meta |= {"reasoning": c.reasoning} if c.reasoning is not None else {}
        meta |= {"reasoning_tokens": u.reasoning_tokens} if u.reasoning_tokens else {}
        meta |= {"malformed": c.malformed, "raw": c.raw} if c.malformed is not None else {}
        text, escaped = stored_text(completion.text)
        meta |= {"text": JSON_TEXT} if escaped else {}
        row = (key, text, u.input_tokens, u.output_tokens, plain(backend), plain(model), time.time(), json.dumps(meta))
        with self._lock:
            if self._backlog:  # keep order behind the rows already waiting
                self._backlog.append(row)
                self.deferred += 1
                return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not inside dispatch's event loop: commit now
            self._write([row])
            return
        # Answers that arrive in one turn of the event loop are committed together, at the start of the next
        # turn, before any new request is sent for them: one commit costs about as much as one row (issue 12).
        self._pending.append(row)
        if len(self._pending) == 1:
            loop.call_soon(self.flush)

    def flush(self) -> None:
        """Commit the answers `put` is holding for the end of this event-loop turn."""
        rows, self._pending = self._pending, []
        if rows:
            self._write(rows)

    def _write(self, rows: list[_Row]) -> None:
        """Commit rows in one transaction, waiting at most INLINE_WAIT_MS; a locked file sends them to the backlog."""
        try:
            db = self._open()
            if not self._inline:  # writes run inside the event loop: from now on they wait only briefly
                db.execute(f"PRAGMA busy_timeout = {INLINE_WAIT_MS}")
                self._inline = True
            self._refuse(_insert(db, rows))
        except (sqlite3.Error, OSError, HarnessError) as e:  # the file: locked, or its disk full
            with self._lock:
                self._backlog.extend(rows)
                self.deferred += len(rows)
                self._failed(e)
                if self._flusher is None:
                    self._flusher = threading.Thread(target=self._flush_loop, name="cache-writer", daemon=True)
                    self._flusher.start()

    def _failed(self, error: BaseException) -> None:
        cause = error.__cause__ if isinstance(error, HarnessError) and error.__cause__ is not None else error
        self.problem = problem(self.path, cause)
        if full(self.path, cause):
            self.disk_full = self.problem

    def _refuse(self, rows: list[_Row]) -> None:
        if rows:
            self.refused += len(rows)
            self.problem = f"SQLite refused {self.refused} answers for {self.path}"

    def _write_backlog(self) -> bool:
        """One try at the whole backlog in one transaction, waiting up to the busy timeout; True when empty."""
        with self._lock:
            rows = list(self._backlog)
        if not rows:
            return True
        db: sqlite3.Connection | None = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = _connect(self.path, self.busy_timeout_ms)
            self._refuse(_insert(db, rows))
        except (sqlite3.Error, OSError, HarnessError) as e:
            with self._lock:
                self._failed(e)
            return False
        finally:
            if db is not None:
                db.close()
        with self._lock:
            del self._backlog[: len(rows)]
            return not self._backlog

    def _flush_loop(self) -> None:
        while not self._closing.is_set():  # close() makes the last try itself
            if self._write_backlog():
                with self._lock:
                    if not self._backlog:
                        self._flusher = None
                        return
            self._closing.wait(0.5 if self.disk_full else 0.05)  # a full disk rarely frees itself at once

    def __len__(self) -> int:
        self.flush()
        if self._db is None and not self.path.exists():
            return 0
        return int(self._open().execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        """Write what the backlog holds (one last wait of up to the busy timeout), then close; `unsaved`
        counts the answers that still could not be written."""
        self.flush()
        self._closing.set()
        flusher = self._flusher
        if flusher is not None:
            flusher.join()
        self._write_backlog()
        self.unsaved = len(self._backlog) + self.refused
        if self._db is not None:
            self._db.close()
            self._db = None
