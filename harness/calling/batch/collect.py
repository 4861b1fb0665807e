"""Waiting for batches and collecting their results into the cache (harness/calling/batch/flow.py has the order)."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import Any

from harness.calling.backends.base import PermanentError, RetryableError
from harness.calling.batch import BatchesPending
from harness.calling.batch.base import Remote, client_for, with_retries
from harness.calling.batch.state import Context, Group
from harness.types import HarnessError


async def wait(ctx: Context, waiting: dict[str, Group]) -> None:
    """Poll every batch until all are collected or --batch-wait runs out (then BatchesPending).

    With --batch-wait 0 each batch is still checked once, so what has ended since the last run is collected.
    """
    started = time.monotonic()
    deadline = None if ctx.options.wait is None else started + ctx.options.wait
    open_ids = set(waiting)
    rounds = 0
    while open_ids:
        for n, local_id in enumerate(sorted(open_ids), start=1):
            if await _poll(ctx, local_id, waiting[local_id], f"{n}/{len(open_ids)}"):
                open_ids.discard(local_id)
        left = None if deadline is None else deadline - time.monotonic()
        if not open_ids or (left is not None and left <= 0):
            break
        # 1, 2, 4, ... seconds, then every --batch-poll: a small batch is seen the moment it ends, a large one
        # is not asked about every second for hours.
        pause = min(ctx.options.poll, 2.0**rounds)
        rounds += 1
        pause = pause if left is None else min(pause, left)
        if ctx.verbose:
            ctx.log(
                f"batch: {len(open_ids)} still running, waited {_clock(time.monotonic() - started)}; "
                f"next poll in {pause:g}s"
            )
        await asyncio.sleep(pause)
    if open_ids:
        rows = [ctx.store.row(i) for i in sorted(open_ids)]
        ids = ", ".join(r.batch_id or "(being submitted)" for r in rows)
        raise BatchesPending(
            f"{sum(r.total for r in rows)} requests in {len(rows)} batches are still running ({ids}); answers so far "
            "are cached and nothing else was written: rerun the same command to collect them"
        )


async def _poll(ctx: Context, local_id: str, group: Group, label: str) -> bool:
    """One status check (and the download, once ended); True when the batch is collected."""
    row = ctx.store.row(local_id)
    if row.batch_id is not None and row.batch_id not in ctx.out.batch_ids:
        ctx.out.batch_ids.append(row.batch_id)
    if row.stage == "collected":  # collected meanwhile by another run sharing the cache
        _settle(ctx, local_id)
        return True
    if row.batch_id is None:
        return False  # another live run is still submitting it
    p, client, batch_id = group.provider, client_for(group.backend, row.base_url), row.batch_id
    try:
        remote = await with_retries(ctx.retry, lambda: p.retrieve(client, batch_id))
    except RetryableError as e:
        ctx.log(f"batch {p.name} {batch_id}: status check failed ({e}); trying again at the next poll")
        return False
    except PermanentError as e:
        if e.fatal and not str(e).startswith("HTTP 404"):
            raise HarnessError(f"{p.name} batch {batch_id}: {e}") from None
        # The provider no longer knows it: its requests are this run's errors, and free for a rerun.
        ctx.store.collect(local_id, "missing", dict.fromkeys(ctx.store.keys(local_id), f"batch {batch_id}: {e}"))
        _settle(ctx, local_id)
        return True
    ctx.store.set_status(local_id, remote.status, remote.done, remote.failed)
    line = (
        f"batch {p.name} {batch_id} [{label}]: {remote.status}, {remote.done}/{remote.total} done, "
        f"{remote.failed} failed; {_clock(time.time() - row.created)} since submission"
    )
    if not remote.ended:
        if ctx.verbose:
            ctx.log(line)
        return False
    collected = await _collect(ctx, local_id, group, client, remote)
    ctx.log(line + ("; results collected" if collected else ""))
    return collected


async def _collect(ctx: Context, local_id: str, group: Group, client: Any, remote: Remote) -> bool:
    """Stream an ended batch's results into the cache, then close it with its per-request errors."""
    keys = set(ctx.store.keys(local_id))
    seen: dict[str, str | None] = {}  # key -> None (answered) or its error
    try:
        async for outcome in group.provider.results(client, remote):
            if outcome.key not in keys:
                continue
            if outcome.completion is not None:
                ctx.cache.put(outcome.key, outcome.completion, group.backend.name, group.backend.model)
                seen[outcome.key] = None
            elif seen.get(outcome.key, "") is not None:  # an answer beats an error line for the same id
                seen[outcome.key] = outcome.error
    except PermanentError as e:
        if e.fatal and not str(e).startswith("HTTP 404"):
            raise HarnessError(f"{group.provider.name} batch {remote.batch_id}: {e}") from None
        ctx.log(f"batch {remote.batch_id}: results unavailable ({e}); its unanswered requests count as failed")
    except Exception as e:  # dropped mid-stream: what was read is cached; a rerun reads the file again
        ctx.log(
            f"batch {remote.batch_id}: downloading results failed ({type(e).__name__}: {e}); the answers read "
            "so far are cached, rerun to fetch the rest"
        )
        return False
    errors = {k: e for k, e in seen.items() if e is not None}
    why = remote.why or "the batch returned no result for this request"
    errors |= {k: f"{why} ({remote.batch_id})" for k in keys - seen.keys()}
    ctx.store.collect(local_id, remote.status, errors, remote.why if errors else None)
    _settle(ctx, local_id)
    return True


def _settle(ctx: Context, local_id: str) -> None:
    """Take a collected batch's outcomes into this invocation's results."""
    for key, error in ctx.store.settled_since(ctx.store.keys(local_id), 0.0).items():
        if error is not None:
            ctx.out.errors[key] = error
            continue
        hit = ctx.cache.get(key, key)
        if hit is not None:
            ctx.out.answers[key] = dataclasses.replace(hit, cached=False)  # every field the cache keeps


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"
