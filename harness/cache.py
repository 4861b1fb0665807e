"""Response cache in SQLite: finished answers are looked up first, so a request is never paid for twice.

One row per answered request, committed as it arrives (WAL), so a run killed with `kill -9` keeps every
answer it received. Errors are never stored: a rerun retries exactly the requests that failed. Two runs
may share one file (SQLite's locking; writers wait up to `BUSY_TIMEOUT_MS`).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from pathlib import Path

from harness.backends.base import Backend
from harness.types import Completion, HarnessError, Request, Usage

BUSY_TIMEOUT_MS = 30_000
SCHEMA_VERSION = 1  # part of every key: a change in what a key covers starts a fresh keyspace


def request_key(backend: Backend, request: Request) -> str:
    """Hash of everything that decides the answer: backend, model, endpoint and decoding (describe()), prompt."""
    identity = {
        "v": SCHEMA_VERSION,
        "backend": backend.name,
        "model": backend.model,
        "params": backend.describe(),
        "prompt": request.prompt,
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
    }
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()


class ResponseCache:
    """Key -> (text, usage). Holds no prompts and no secrets: keys are hashes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
            self._db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            self._db.execute("PRAGMA journal_mode = WAL")
            # NORMAL in WAL mode: a committed row survives the process being killed (not a power cut).
            self._db.execute("PRAGMA synchronous = NORMAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS responses ("
                " key TEXT PRIMARY KEY, text TEXT NOT NULL, input_tokens INTEGER NOT NULL,"
                " output_tokens INTEGER NOT NULL, backend TEXT NOT NULL, model TEXT NOT NULL, created REAL NOT NULL,"
                " meta TEXT)"
            )
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(responses)")}
            if "meta" not in columns:  # a cache file from before answers carried more than text and usage
                self._db.execute("ALTER TABLE responses ADD COLUMN meta TEXT")
        except sqlite3.Error as e:
            raise HarnessError(f"cannot open the response cache {path}: {e}") from e

    def get(self, key: str, request_id: str) -> Completion | None:
        """The stored answer for `key`, as a Completion for `request_id`, or None."""
        row = self._db.execute(
            "SELECT text, input_tokens, output_tokens, meta FROM responses WHERE key = ?", (key,)
        ).fetchone()
        if row is None:
            return None
        meta = json.loads(row[3]) if row[3] else {}
        return Completion(
            request_id, row[0], usage=Usage(row[1], row[2]), cached=True, score_probs=meta.get("score_probs")
        )

    def put(self, key: str, completion: Completion, backend: str, model: str) -> None:
        """Store one answer and commit at once. Errors are refused: they must be retried, not replayed."""
        if completion.error is not None or completion.text is None:
            raise ValueError("errors are never cached")
        u = completion.usage
        probs = completion.score_probs
        meta = json.dumps({"score_probs": dict(probs)}) if probs is not None else None  # JSON: room for more
        self._db.execute(
            "INSERT OR REPLACE INTO responses (key, text, input_tokens, output_tokens, backend, model, created, meta)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (key, completion.text, u.input_tokens, u.output_tokens, backend, model, time.time(), meta),
        )

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        self._db.close()
