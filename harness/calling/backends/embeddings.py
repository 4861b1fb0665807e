"""Embedding backends for the qa-embed variant (Tu et al. 2024, §4.1): a request's prompt is one text to embed.

They plug into the same dispatch (cache, retries, concurrency) as the text backends: the Completion's
text is the embedding as a JSON list of floats, so a vector is cached like any other answer.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

from harness.calling.backends.base import LocalBackend, MalformedReply, token_count
from harness.calling.backends.description import Description
from harness.calling.backends.openai import OpenAIBackend
from harness.calling.backends.openai_names import default_chat
from harness.config.settings import RunConfig
from harness.scoring.vectors import MAX_TEXT, NOT_A_LIST, TOO_LONG, UNUSABLE, check_vector
from harness.types import Completion, HarnessError, Request, Usage

# One vector of MAX_DIM numbers, as JSON (MAX_TEXT characters at most) and its envelope: a longer reply is refused
# unread, its vector too long.
MAX_REPLY_BYTES = 2 * MAX_TEXT


class OpenAIEmbeddingBackend(OpenAIBackend):
    """OpenAI's embeddings API (text-embedding-ada-002 as in Tu et al., text-embedding-3-*), or a compatible server."""

    name = "openai-embeddings"

    def setup(self) -> None:
        """No decoding fields are sent: --chat, --stop, --reasoning do not apply (`chat` counts for --max-cost)."""
        self.chat = default_chat(self.model, self.api.base_urls)

    @property
    def endpoint(self) -> str:
        return "/v1/embeddings"

    def body(self, request: Request) -> dict[str, Any]:
        """The exact JSON body sent to `endpoint`."""
        return {"model": self.model, "input": [request.prompt]}

    def describe(self) -> dict[str, object]:
        return {"api": "embeddings", "base_urls": sorted(self.base_urls), "deterministic": True}

    def output_budget(self, request: Request) -> int:
        return 0  # embeddings bill input tokens only

    async def send(self, request: Request) -> Completion:
        # Through the SDK's typed create(), not the lean path of the text backends: it asks for base64
        # vectors and decodes them, and qa-embed sends a few thousand requests, not hundreds a second.
        body = self.body(request)
        with self.pool.lease() as route, self.errors(body):
            raw = await route.client.embeddings.with_raw_response.create(**body)
        if len(raw.content) > MAX_REPLY_BYTES:  # never parsed: 4M numbers would take a GB as Python objects
            return Completion(request.id, "", malformed=f"{UNUSABLE}: {TOO_LONG}")
        try:
            json.loads(raw.content)
        except ValueError:  # not JSON (cut off, not UTF-8): a broken delivery, retried
            raise MalformedReply("malformed reply: not JSON") from None
        except RecursionError:
            return Completion(request.id, "", malformed=f"{UNUSABLE}: {NOT_A_LIST}")  # nested too deep
        try:
            response = raw.parse()
        except Exception:  # the SDK could not decode the base64 vector it asked for (a string): paid for, so kept
            return Completion(request.id, "", malformed=f"{UNUSABLE}: {NOT_A_LIST}")
        if not response.data:
            raise MalformedReply("malformed reply: no embedding in the reply")
        tokens = token_count(getattr(response.usage, "prompt_tokens", None))
        usage = Usage(tokens or 0, 0, reported=tokens is not None)
        # Checked at the door (scoring/vectors.py): a vector that cannot be used is kept as a malformed answer with
        # its reason code, cached as paid for and never bought again, and the item says why it has no prediction.
        vector = check_vector(getattr(response.data[0], "embedding", None))
        if isinstance(vector, str):
            return Completion(request.id, "", usage=usage, malformed=f"{UNUSABLE}: {vector}")
        return Completion(request.id, json.dumps(vector), usage=usage)


CHUNK_BATCHES = 8  # batches encoded between two yields


class SentenceTransformerBackend(LocalBackend):
    """A local sentence-transformers model (a directory or hub id), all texts encoded in one call."""

    name = "sentence-transformers"

    def __init__(self, model: str, batch_size: int | None = None) -> None:
        self.model = model
        self.batch_size = batch_size or 64
        self._encoder: object | None = None

    @classmethod
    def from_config(cls, config: RunConfig, line: Description) -> SentenceTransformerBackend:
        return cls(config.model, config.local.batch_size)

    def _load(self) -> object:
        if self._encoder is None:
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError:
                raise HarnessError(
                    'the qa-embed variant with a local model needs sentence-transformers: pip install -e ".[embed]"'
                ) from None
            try:
                self._encoder = SentenceTransformer(self.model)
            except Exception as e:  # a missing directory, no hub access, a broken checkpoint
                raise HarnessError(f"cannot load sentence-transformers model {self.model!r}: {e}") from None
        return self._encoder

    def describe(self) -> dict[str, object]:
        return {"engine": self.name, "normalize": False, "deterministic": True}

    async def complete(self, requests: Sequence[Request]) -> AsyncIterator[Completion]:
        encoder = self._load()
        if self.on_work is not None:
            self.on_work()  # loaded: the bar's estimate counts from here (harness/calling/progress.py)
        # In chunks, each yielded as it is done: the cache keeps what a long run (the CASE protocol embeds tens of
        # thousands of texts) has encoded when it is stopped, and the progress bar moves.
        step = self.batch_size * CHUNK_BATCHES
        for start in range(0, len(requests), step):
            chunk = requests[start : start + step]
            vectors = encoder.encode([r.prompt for r in chunk], batch_size=self.batch_size)  # type: ignore[attr-defined]
            for r, v in zip(chunk, vectors, strict=True):
                yield Completion(r.id, json.dumps([float(x) for x in v]))
            await asyncio.sleep(0)  # a turn of the event loop: the cache commits the chunk, the progress bar moves
