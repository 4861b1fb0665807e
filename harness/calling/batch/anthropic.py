"""Anthropic's Message Batches through the SDK: messages.batches.create with one {custom_id, params} per
request -> messages.batches.retrieve until processing ends -> messages.batches.results, streamed and
matched to requests by custom_id.

`params` is `backend.body(request)`, the very body the one-by-one path posts (temperature included in
--anthropic-greedy mode, under the same pinned API version, which the client sends on every call), and
each answer goes through `backend.completion_from`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence

from anthropic import AsyncAnthropic
from anthropic.types.messages import MessageBatch

from harness.calling.backends.anthropic import AnthropicBackend
from harness.calling.batch.base import BatchProvider, Item, Outcome, Remote

# Limits from the Message Batches guide: 100,000 requests or 256 MB per batch, whichever comes first.
MAX_REQUESTS = 100_000
MAX_BYTES = 256 * 1000 * 1000 - 1024  # room for the {"requests": [...]} around the items
FIND_WINDOW = 600.0  # clock skew allowed between us and the provider when looking for a lost batch


class AnthropicBatches(BatchProvider):
    """Message Batches for one Anthropic backend."""

    name = "anthropic"
    max_requests, max_bytes = MAX_REQUESTS, MAX_BYTES
    backend: AnthropicBackend

    def item_size(self, item: Item) -> int:
        return len(json.dumps({"custom_id": item.key, "params": item.body}, ensure_ascii=False).encode()) + 2

    async def upload(self, client: AsyncAnthropic, local_id: str, items: Sequence[Item]) -> str | None:
        return None  # the requests travel inside the create call

    async def create(self, client: AsyncAnthropic, local_id: str, file_id: str | None, items: Sequence[Item]) -> Remote:
        requests = [{"custom_id": i.key, "params": i.body} for i in items]
        with self.errors():
            batch = await client.messages.batches.create(requests=requests)  # type: ignore[arg-type]
        return self.remote(batch)

    async def find(
        self, client: AsyncAnthropic, file_id: str | None, total: int, since: float, known: set[str]
    ) -> str | None:
        """A batch of our size, created after our create call went out, that no run has recorded.

        Message Batches carry no metadata, so size and time are all there is to go on; of several such
        batches the earliest is ours (a later one would have been made by someone who recorded it).
        """
        found = None
        with self.errors():
            async for batch in client.messages.batches.list(limit=100):  # newest first
                created = batch.created_at.timestamp()
                if created < since - FIND_WINDOW:
                    break
                counts = batch.request_counts
                size = counts.processing + counts.succeeded + counts.errored + counts.canceled + counts.expired
                if size == total and batch.id not in known:
                    found = batch.id
        return found

    async def retrieve(self, client: AsyncAnthropic, batch_id: str) -> Remote:
        with self.errors():
            batch = await client.messages.batches.retrieve(batch_id)
        return self.remote(batch)

    def remote(self, batch: MessageBatch) -> Remote:
        c = batch.request_counts
        failed = c.errored + c.canceled + c.expired
        total = c.processing + c.succeeded + failed
        why = "batch ended before this request was answered" if batch.processing_status == "ended" else None
        return Remote(
            batch.id,
            batch.processing_status,
            batch.processing_status == "ended",
            c.succeeded,
            failed,
            total,
            why,
            batch,
        )

    async def results(self, client: AsyncAnthropic, remote: Remote) -> AsyncIterator[Outcome]:
        with self.errors():
            decoder = await client.messages.batches.results(remote.batch_id)
            async for line in decoder:
                yield self.outcome(line.custom_id, line.result)

    def outcome(self, key: str, result: object) -> Outcome:
        kind = getattr(result, "type", None)
        if kind == "succeeded":
            try:
                message = result.message.to_dict()  # type: ignore[attr-defined]
            except (AttributeError, TypeError) as e:
                return self.failed(key, f"malformed response: {str(e)[:200]}")
            return self.answer(key, message)
        if kind == "errored":
            error = getattr(getattr(result, "error", None), "error", None)
            return self.failed(key, f"{getattr(error, 'type', 'error')}: {getattr(error, 'message', '')}")
        return Outcome(key, None, f"{kind}: the batch ended before this request was processed")
