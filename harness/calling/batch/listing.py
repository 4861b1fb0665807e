"""`run_eval.py batches`: the batches a cache file knows, as last seen (reads the file only; calls no API)."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

from harness.calling.batch.store import BatchRow, BatchStore
from harness.types import HarnessError


def state(row: BatchRow, store: BatchStore) -> str:
    """One word for a batch: pending, finished, expired, cancelled, failed, submitting or interrupted."""
    if row.stage == "submitted":
        return "pending"
    if row.stage != "collected":
        return "interrupted" if store.abandoned(row) else "submitting"
    return {"expired": "expired", "cancelled": "cancelled", "failed": "failed", "missing": "missing"}.get(
        row.status or "", "finished"
    )


def list_batches(path: Path) -> str:
    if not path.is_file():
        raise HarnessError(f"no response cache at {path} (pass --cache or --results-dir)")
    store = BatchStore(path)
    try:
        rows = store.rows()
        states = [state(r, store) for r in rows]
    finally:
        store.close()
    if not rows:
        return f"no batches recorded in {path}\n"
    header = ("state", "provider", "model", "batch id", "status", "done", "failed", "total", "submitted", "age")
    now = time.time()
    table = [header]
    for r, s in zip(rows, states, strict=True):
        created = datetime.fromtimestamp(r.created, UTC).strftime("%Y-%m-%d %H:%M")
        table.append(
            (
                s,
                r.provider,
                r.model,
                r.batch_id or "-",
                r.status or "-",
                str(r.done),
                str(r.failed),
                str(r.total),
                created,
                _age(now - r.created),
            )
        )
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in table]
    counts = {s: states.count(s) for s in dict.fromkeys(states)}
    summary = f"{len(rows)} batches: " + ", ".join(f"{n} {s}" for s, n in counts.items())
    notes = [f"  {r.batch_id}: {r.note}" for r in rows if r.note]
    return "\n".join([*lines, summary, *(["notes:", *notes] if notes else [])]) + "\n"


def _age(seconds: float) -> str:
    s = int(seconds)
    if s < 3600:
        return f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600}h"
