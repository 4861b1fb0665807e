"""Waiting for batches and collecting their results into the cache (harness/calling/batch/flow.py has the order)."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import Any

from harness.calling.backends.base import PermanentError, RetryableError
from harness.calling.batch import BatchesPending
from harness.calling.batch.base import Remote, client_for
from harness.calling.batch.state import Context, Group, with_retries
from harness.types import Completion, HarnessError


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
    """Stream an ended batch's results into the cache, then close it with its per-request errors.

    A result file may disagree with what was sent. A request named more than once with different outcomes keeps
    the first answer in the file (an answer beats an error line): that one goes to the cache, and the run reads
    its answers back from the cache, so run folder and cache agree; the conflict is kept in the batch records
    (a rerun's metrics.json names it too) and reported. Lines naming requests this batch never sent are ignored
    and counted."""
    keys = set(ctx.store.keys(local_id))
    seen: dict[str, str | None] = {}  # key -> None (answered) or its error
    kept: dict[str, Completion] = {}  # key -> the answer stored
    conflicts: dict[str, str] = {}  # key -> what else the file said
    unknown: list[str] = []
    try:
        async for outcome in group.provider.results(client, remote):
            key, completion = outcome.key, outcome.completion
            if key not in keys:
                unknown.append(key or "(a line without one)")
            elif key in kept:
                if completion != kept[key]:
                    other = f"answer {completion.text!r}" if completion is not None else f"error {outcome.error!r}"
                    conflicts[key] = f"the result file also gave {other}"[:300]
            elif completion is not None:
                kept[key] = completion
                ctx.cache.put(key, completion, group.backend.name, group.backend.model)
                if key in seen:
                    conflicts[key] = f"the result file also gave error {seen[key]!r}"[:300]
                seen[key] = None
            else:
                seen.setdefault(key, outcome.error)
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
    ctx.cache.flush()  # this turn's answers, committed before the batch is closed and they are read back
    if ctx.cache.disk_full is not None:  # left open: a rerun downloads the results again and pays nothing more
        raise HarnessError(
            f"{ctx.cache.disk_full}: the results of batch {remote.batch_id} could not all be stored; the batch "
            "stays open, so the same command run again after freeing space downloads them again at no cost"
        )
    _report(ctx, remote.batch_id, conflicts, unknown)
    errors = {k: e for k, e in seen.items() if e is not None}
    why = remote.why or "the batch returned no result for this request"
    errors |= {k: f"{why} ({remote.batch_id})" for k in keys - seen.keys()}
    ctx.store.collect(local_id, remote.status, errors, remote.why if errors else None, conflicts)
    _settle(ctx, local_id, kept)
    return True


def _report(ctx: Context, batch_id: str, conflicts: dict[str, str], unknown: list[str]) -> None:
    """Say what the result file got wrong (on stderr; metrics.json takes it from ctx.out and the records)."""
    ctx.out.conflicts |= conflicts
    ctx.out.unknown += len(unknown)
    if conflicts:
        ctx.log(
            f"warning: batch {batch_id}: {len(conflicts)} requests came back more than once with different "
            f"outcomes (custom_id {', '.join(sorted(conflicts)[:3])}{', ...' if len(conflicts) > 3 else ''}): "
            "the first answer in the result file is kept, in the cache and in the run folder"
        )
    if unknown:
        shown = ", ".join(sorted(set(unknown))[:3])
        lines = f"{len(unknown)} result lines name" if len(unknown) > 1 else "1 result line names"
        ctx.log(f"warning: batch {batch_id}: {lines} requests it never held ({shown}); ignored")


def _settle(ctx: Context, local_id: str, fresh: dict[str, Completion] | None = None) -> None:
    """Take a collected batch's outcomes into this invocation's results, as the cache holds them (`fresh`: what
    was just collected, for an answer a locked cache file has not taken yet)."""
    for key, error in ctx.store.settled_since(ctx.store.keys(local_id), 0.0).items():
        if error is not None:
            ctx.out.errors[key] = error
            continue
        hit = ctx.cache.get(key, key) or (fresh or {}).get(key)
        if hit is not None:
            ctx.out.answers[key] = dataclasses.replace(hit, cached=False)  # every field the cache keeps


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"
