"""Taking over interrupted submissions, and submitting new batches (harness/calling/batch/flow.py has the order)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Any

from harness.calling.backends.base import PermanentError, RetryableError
from harness.calling.batch.base import Item, Provider, Remote, client_for
from harness.calling.batch.state import Context, Group, with_retries
from harness.calling.batch.store import BatchRow
from harness.calling.redaction import redact
from harness.types import HarnessError


async def recover(ctx: Context, group: Group) -> set[str]:
    """Take over the claims of killed runs; the local ids of open batches that hold this group's keys.

    Keys held by an open batch leave `group.bodies`: they are waited for, never submitted again.
    """
    store, name = ctx.store, group.provider.name
    held = store.in_flight(group.bodies)
    for local_id in sorted(set(held.values())):
        row = store.row(local_id)
        if row.stage not in ("planned", "uploaded", "creating") or not store.abandoned(row):
            continue
        found = None
        if row.stage == "creating":  # the create call may have reached the provider
            found = await find(ctx, group.provider, client_for(group.backend, row.base_url), row)
        if found is None:
            store.drop(local_id)
            ctx.log(f"batch {name}: an interrupted submission never reached the provider; submitting it again")
        else:
            store.set_stage(local_id, "submitted", batch_id=found)
            ctx.log(f"batch {name}: found {found}, whose submission was interrupted; resuming it")
    held = store.in_flight(group.bodies)
    for key in held:
        group.bodies.pop(key)
    return set(held.values())


async def find(ctx: Context, provider: Provider, client: Any, row: BatchRow) -> str | None:
    """The provider's id for a batch whose create call may have been lost, else None."""
    since = row.create_sent or row.updated
    try:
        return await with_retries(
            ctx.retry, lambda: provider.find(client, row.input_file_id, row.total, since, ctx.store.known_batch_ids())
        )
    except RetryableError as e:
        raise HarnessError(
            f"cannot tell whether an interrupted batch submission reached {provider.name} (listing its batches "
            f"failed: {e}); rerun later: nothing is submitted twice"
        ) from None
    except PermanentError as e:
        if e.fatal and not str(e).startswith("HTTP 404"):
            raise HarnessError(f"{provider.name}: {e}") from None
        # A server that cannot list batches can never tell us: waiting would not help, so submit again.
        ctx.log(f"warning: {provider.name} cannot list batches ({e}); an interrupted submission is sent again")
        return None


async def submit(ctx: Context, group: Group) -> list[str]:
    """Claim, upload and create batches for every key still in `group.bodies`; their local ids."""
    if not group.bodies:
        return []
    p = group.provider
    items = [Item(k, body) for k, body in group.bodies.items()]
    limit = min(p.max_requests, ctx.options.max_requests or p.max_requests)
    chunks = split(items, limit, p.max_bytes, p.item_size)
    by_key = {i.key: i for i in items}
    # as the cache file records them: credentials in a --base-url redacted (client_for matches them so)
    urls = [redact(url, group.backend.secrets) for url in group.backend.base_urls]  # type: ignore[attr-defined]
    local_ids = ctx.store.claim(p.name, group.backend.model, urls, [[i.key for i in c] for c in chunks])
    for local_id in local_ids:
        batch_items = [by_key[k] for k in ctx.store.keys(local_id)]
        await _submit_one(ctx, group, local_id, batch_items)
        ctx.out.submitted += len(batch_items)
    return local_ids


async def _submit_one(ctx: Context, group: Group, local_id: str, items: list[Item]) -> None:
    p, row = group.provider, ctx.store.row(local_id)
    client = client_for(group.backend, row.base_url)
    try:
        file_id = await with_retries(ctx.retry, lambda: p.upload(client, local_id, items))
        if file_id is not None:
            ctx.store.set_stage(local_id, "uploaded", input_file_id=file_id)
        remote = await _create(ctx, p, client, local_id, file_id, items)
    except PermanentError as e:  # refused outright (wrong shape, no batch endpoint, bad key): nothing was made
        ctx.store.drop(local_id)
        raise HarnessError(f"{p.name} batch for {group.backend.model!r} refused: {e}") from None
    except RetryableError as e:
        ctx.store.release(local_id)  # the next run finds out whether it was created
        raise HarnessError(
            f"{p.name} batch submission failed after retries: {e}; rerun the same command "
            "(submitted batches are kept, nothing is submitted twice)"
        ) from None
    ctx.log(f"batch {p.name} {group.backend.model}: submitted {remote.batch_id} ({len(items)} requests)")


async def _create(
    ctx: Context, p: Provider, client: Any, local_id: str, file_id: str | None, items: list[Item]
) -> Remote:
    """Create once: after a lost reply (timeout, dropped connection) look for the batch before trying again."""
    policy = ctx.retry
    for attempt in range(policy.max_retries + 1):
        ctx.store.set_stage(local_id, "creating", create_sent=time.time())
        try:
            remote = await p.create(client, local_id, file_id, items)
        except RetryableError:
            found = await find(ctx, p, client, ctx.store.row(local_id))
            if found is not None:
                remote = await with_retries(policy, lambda: p.retrieve(client, found))  # noqa: B023
            elif attempt < policy.max_retries:
                await asyncio.sleep(min(2.0**attempt * policy.backoff_initial, policy.backoff_max))
                continue
            else:
                raise
        ctx.store.set_stage(local_id, "submitted", batch_id=remote.batch_id, status=remote.status)
        return remote
    raise AssertionError("unreachable: the last attempt returns or raises")


def split(items: Sequence[Item], max_requests: int, max_bytes: int, size: Callable[[Item], int]) -> list[list[Item]]:
    """Consecutive chunks within the provider's limits on requests and bytes per batch."""
    chunks: list[list[Item]] = []
    current: list[Item] = []
    used = 0
    for item in items:
        n = size(item)
        if current and (len(current) >= max_requests or used + n > max_bytes):
            chunks.append(current)
            current, used = [], 0
        current.append(item)
        used += n
    if current:
        chunks.append(current)
    return chunks
