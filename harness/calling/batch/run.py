"""Where the batch path meets a run: `batch_call` in place of one-by-one dispatch, `prefetch` for a sweep.

Both open the run's response cache; answers land there under the same keys as one-by-one answers
(harness/calling/cache.py `request_key`), so a grid half done one way finishes the other.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import sqlite3
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from harness.calling.backends import BACKENDS
from harness.calling.backends.base import Backend, RemoteBackend
from harness.calling.batch import BatchesPending
from harness.calling.batch.flow import Job, Session, provider_for
from harness.calling.batch.store import BatchStore
from harness.calling.cache import ResponseCache
from harness.calling.cache_keys import request_key
from harness.calling.options import DispatchOptions, DispatchStats, dispatch_options
from harness.calling.pricing import Price
from harness.calling.redaction import without_prompt
from harness.config.settings import RunConfig
from harness.types import Completion, HarnessError, Request

__all__ = ["BatchesPending", "answered_by_batch", "batch_call", "batchable", "prefetch"]


def batchable(backend: Backend) -> bool:
    """--batch covers the chat backends with a batch endpoint (openai, anthropic); the others (local models,
    offline baselines, embeddings) run as usual, so a sweep may mix them."""
    if isinstance(backend, RemoteBackend) and provider_for(backend) is not None:
        return True
    covered = " and ".join(n for n, d in BACKENDS.items() if d.batch)
    print(f"note: --batch covers the {covered} backends; {backend.name} runs as usual", file=sys.stderr)
    return False


def _session(options: DispatchOptions) -> tuple[Session, ResponseCache]:
    assert options.batch is not None
    if options.cache_path is None:
        raise HarnessError("--batch keeps answers and batch ids in the response cache: it cannot run with --no-cache")
    cache = ResponseCache(options.cache_path)
    session = Session(options.batch, options.retry, cache, options.refresh, options.max_cost, verbose=options.progress)
    return session, cache


def batch_call(
    backend: RemoteBackend, requests: Sequence[Request], options: DispatchOptions, stats: DispatchStats
) -> dict[str, Completion]:
    """One Completion per request id, every uncached request answered through the provider's batch endpoint.

    Raises BatchesPending (nothing to write yet) when --batch-wait ran out before every batch ended.
    """
    stats.requests = len(requests)
    began = time.perf_counter()
    price = options.price
    session, cache = _session(options)
    try:
        got = asyncio.run(session.gather([Job(backend, requests, price)]))
        keys = got.keys.get(0, {})
        done: dict[str, Completion] = {}
        billed: set[str] = set()
        for r in requests:
            key = keys[r.id]
            if key in got.errors:
                done[r.id] = Completion(r.id, None, error=without_prompt(got.errors[key], r.prompt))
            elif key in got.answers and key not in billed:  # arrived now: paid now (a repeated prompt once)
                billed.add(key)
                # The whole reply as completion_from read it: refusal, finish_reason, served model, usage.
                done[r.id] = dataclasses.replace(got.answers[key], request_id=r.id)
            else:
                hit = cache.get(key, r.id)
                done[r.id] = hit or Completion(r.id, None, error="no answer in the cache after its batch ended")
        paid = session.store.answered(keys.values())
        conflicts = session.store.conflicts(set(keys.values()))  # this collection's, or an earlier one's
    finally:
        session.close()
        cache.close()
        stats.seconds = round(time.perf_counter() - began, 3)
    stats.cache = "refresh" if options.refresh else "on"
    stats.cache_hits = sum(keys[r.id] in got.cached for r in requests)
    stats.cache_misses = len(requests) - stats.cache_hits
    stats.errors = sum(c.error is not None for c in done.values())
    stats.first_errors = [c.error for c in done.values() if c.error is not None][:3]  # type: ignore[misc]
    stats.paid_by_batch = {r.id for r in requests if keys[r.id] in paid and done[r.id].error is None}
    if price is not None:
        stats.spent_usd = round(sum(price.batch().cost_of(done[r].usage) for r in _ids(requests, keys, billed)), 6)
    stats.batch = {
        "batches": got.batch_ids,
        "submitted": got.submitted,
        "answered": len(billed),
        "failed": stats.errors,
        "poll_seconds": options.batch.poll if options.batch else None,
        "unknown_ids": got.unknown,  # result lines naming requests their batch never held: ignored
        "conflicts": sum(keys[r.id] in conflicts for r in requests),
    }
    if stats.batch["conflicts"]:
        stats.batch["conflicting_ids"] = [r.id for r in requests if keys[r.id] in conflicts][:20]
        stats.batch["conflict_rule"] = "a request answered more than once: the first answer in the result file is kept"
        if not got.conflicts:  # reported at collection, by an earlier invocation: said again here
            print(
                f"warning: batch: {stats.batch['conflicts']} of these requests came back from their batch more than "
                "once with different outcomes; the first answer is kept (metrics.json: dispatch.batch.conflicts)",
                file=sys.stderr,
            )
    return done


def _ids(requests: Sequence[Request], keys: dict[str, str], billed: set[str]) -> list[str]:
    """The first request id of each billed key."""
    seen: set[str] = set()
    out = []
    for r in requests:
        if keys[r.id] in billed and keys[r.id] not in seen:
            seen.add(keys[r.id])
            out.append(r.id)
    return out


def prefetch(jobs: Sequence[tuple[Backend, Sequence[Request], Price | None]], config: RunConfig) -> None:
    """A sweep's first pass: every cell's uncached requests submitted together, waited for and cached.

    The cells then run as usual and find their answers (or this invocation's batch errors) in place.
    """
    to_batch = [
        Job(b, requests, p) for b, requests, p in jobs if isinstance(b, RemoteBackend) and provider_for(b) is not None
    ]
    if not to_batch:
        return  # local models and embeddings run in their cells as usual
    session, cache = _session(dispatch_options(config, None))
    try:
        got = asyncio.run(session.gather(to_batch))
    finally:
        session.close()
        cache.close()
    if got.submitted or got.batch_ids:
        print(
            f"batch: {len(got.answers)} answers collected, {len(got.errors)} failed, "
            f"{len(got.cached)} were cached; writing the cells",
            flush=True,
        )


def answered_by_batch(
    path: Path, backend: Backend, requests: Sequence[Request], done: dict[str, Completion]
) -> set[str]:
    """Request ids whose cached answer a batch paid for (a one-by-one run reusing a batch run's answers)."""
    if not path.is_file():
        return set()
    try:
        with contextlib.closing(sqlite3.connect(path)) as db:
            has = db.execute("SELECT 1 FROM sqlite_master WHERE name = 'batch_requests'").fetchone()
    except sqlite3.Error:
        return set()
    if not has:
        return set()
    store = BatchStore(path)
    try:
        keys = {r.id: request_key(backend, r) for r in requests if (c := done.get(r.id)) and c.cached}
        paid = store.answered(keys.values())
    finally:
        store.close()
    return {rid for rid, key in keys.items() if key in paid}
