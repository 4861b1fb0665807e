"""OpenAI's Batch API through the SDK: a JSONL file of requests -> files.create(purpose="batch") ->
batches.create(completion_window="24h") -> batches.retrieve until it ends -> the output and error files,
streamed line by line and matched to requests by custom_id.

Every line's body is `backend.body(request)`, the very body the one-by-one path posts to `backend.endpoint`
(/v1/chat/completions, or /v1/completions for raw prompts: the Batch API takes both), and every reply goes
through `backend.completion_from`, so a batch answer and a one-by-one answer are the same Completion.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence

from openai import AsyncOpenAI
from openai.types import Batch

from harness.calling.backends.openai import OpenAIBackend
from harness.calling.batch.base import BatchProvider, Item, Outcome, Remote
from harness.calling.redaction import redact

ENDED = frozenset({"completed", "failed", "expired", "cancelled"})
# Limits from the Batch API reference: "up to 50,000 requests, and can be up to 200 MB in size".
MAX_REQUESTS = 50_000
MAX_BYTES = 200 * 1000 * 1000
FIND_WINDOW = 3600.0  # seconds before a lost create call that a batch listing is searched back to


def jsonl_line(item: Item, endpoint: str) -> bytes:
    """One line of the input file, newline included."""
    line = {"custom_id": item.key, "method": "POST", "url": endpoint, "body": item.body}
    return json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


class OpenAIBatches(BatchProvider):
    """The Batch API for one OpenAI backend (or an OpenAI-compatible server that has it)."""

    name = "openai"
    max_requests = MAX_REQUESTS
    max_bytes = MAX_BYTES
    backend: OpenAIBackend

    def item_size(self, item: Item) -> int:
        return len(jsonl_line(item, self.backend.endpoint))

    async def upload(self, client: AsyncOpenAI, local_id: str, items: Sequence[Item]) -> str | None:
        data = b"".join(jsonl_line(i, self.backend.endpoint) for i in items)
        with self.errors():
            uploaded = await client.files.create(file=(f"csts-{local_id}.jsonl", data), purpose="batch")
        return uploaded.id

    async def create(self, client: AsyncOpenAI, local_id: str, file_id: str | None, items: Sequence[Item]) -> Remote:
        assert file_id is not None
        with self.errors():
            batch = await client.batches.create(
                input_file_id=file_id,
                endpoint=self.backend.endpoint,  # type: ignore[arg-type]
                completion_window="24h",
                metadata={"csts_harness": local_id},
            )
        return self.remote(batch, len(items))

    async def find(
        self, client: AsyncOpenAI, file_id: str | None, total: int, since: float, known: set[str]
    ) -> str | None:
        """A batch made from our uploaded file: nothing else can have that input_file_id."""
        if file_id is None:
            return None
        with self.errors():
            async for batch in client.batches.list(limit=100):  # newest first
                if batch.input_file_id == file_id:
                    return batch.id
                if batch.created_at < since - FIND_WINDOW:
                    break
        return None

    async def retrieve(self, client: AsyncOpenAI, batch_id: str) -> Remote:
        with self.errors():
            batch = await client.batches.retrieve(batch_id)
        return self.remote(batch, None)

    def remote(self, batch: Batch, total: int | None) -> Remote:
        counts = batch.request_counts
        done, failed = (counts.completed, counts.failed) if counts else (0, 0)
        why = None
        if batch.status == "failed" and batch.errors and batch.errors.data:
            why = redact("; ".join(f"{e.code}: {e.message}" for e in batch.errors.data[:3]), self.key)
        elif batch.status in ("expired", "cancelled"):
            why = f"batch {batch.status} before this request was answered"
        elif batch.status == "failed":
            why = "batch failed validation"
        return Remote(
            batch.id,
            batch.status,
            batch.status in ENDED,
            done,
            failed,
            counts.total if counts else total or 0,
            why,
            batch,
        )

    async def results(self, client: AsyncOpenAI, remote: Remote) -> AsyncIterator[Outcome]:
        batch: Batch = remote.raw
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            with self.errors():
                async with client.files.with_streaming_response.content(file_id) as response:
                    async for line in response.iter_lines():
                        if line.strip():
                            yield self.outcome(line)

    def outcome(self, line: str) -> Outcome:
        """One output- or error-file line as an Outcome."""
        try:
            record = json.loads(line)
            key = record["custom_id"]
        except (ValueError, KeyError, TypeError):
            return Outcome("", None, f"malformed line in a batch result file: {line[:100]!r}")
        error = record.get("error")
        if error:  # not processed: expired, cancelled, ...
            return self.failed(key, f"{error.get('code')}: {error.get('message')}")
        response = record.get("response") or {}
        status, body = response.get("status_code"), response.get("body")
        if status != 200:
            inner = body.get("error", body) if isinstance(body, dict) else body
            message = inner.get("message") if isinstance(inner, dict) else inner
            return self.failed(key, f"HTTP {status}: {message}")
        # The reply of the batch's endpoint (Chat Completions, or Completions for raw prompts), read as the
        # one-by-one path reads it.
        return self.answer(key, body)
