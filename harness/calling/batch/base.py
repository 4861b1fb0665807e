"""What the batch path needs from a provider (the retry rule for its API calls is the flow's: state.py).

A provider (harness/calling/batch/openai.py, harness/calling/batch/anthropic.py) turns request bodies into one batch at
the provider, reports its status, and streams back one Outcome per request. It never touches the cache or
the batch records: harness/calling/batch/flow.py does, in the order that makes a `kill -9` harmless.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

from harness.calling.backends.base import MalformedReply, PermanentError
from harness.calling.backends.reading import reported_error, unreadable
from harness.calling.redaction import redact
from harness.types import Completion, HarnessError


@dataclass(frozen=True)
class Item:
    """One request in a batch: its cache key (also its custom_id) and the exact JSON body."""

    key: str
    body: dict[str, Any]


@dataclass(frozen=True)
class Remote:
    """What the provider last said about one batch."""

    batch_id: str
    status: str  # the provider's own word (in_progress, ended, expired, ...)
    ended: bool  # no request will change any more: results can be collected
    done: int
    failed: int
    total: int
    why: str | None = None  # why a batch ended without answering everything (validation failed, expired, ...)
    raw: Any = field(default=None, compare=False, repr=False)  # the SDK object (output file ids, ...)


@dataclass(frozen=True)
class Outcome:
    """One request's result: a Completion (request_id = key) or an error that a later run may retry."""

    key: str
    completion: Completion | None
    error: str | None = None


class Provider(Protocol):
    name: str
    max_requests: int  # the provider's limit per batch
    max_bytes: int  # the provider's limit on one batch's size

    def item_size(self, item: Item) -> int:
        """Bytes this request adds to a batch (what the byte limit counts)."""
        ...

    async def upload(self, client: Any, local_id: str, items: Sequence[Item]) -> str | None:
        """Upload the requests where the provider wants a file first; its id (None: no file step)."""
        ...

    async def create(self, client: Any, local_id: str, file_id: str | None, items: Sequence[Item]) -> Remote:
        """Create the batch; the Remote carries the provider's id, which the caller records at once."""
        ...

    async def find(self, client: Any, file_id: str | None, total: int, since: float, known: set[str]) -> str | None:
        """The id of a batch this run's create call may have made before the process died, else None."""
        ...

    async def retrieve(self, client: Any, batch_id: str) -> Remote: ...

    def results(self, client: Any, remote: Remote) -> AsyncIterator[Outcome]:
        """Every result the provider holds for an ended batch, as it streams in."""
        ...


class BatchProvider:
    """What the batch endpoints share (batch/openai.py, batch/anthropic.py): the backend whose `body` is each
    request's and whose `completion_from` reads each answer, and its errors and secrets (only to redact them)."""

    name: str
    max_requests: int
    max_bytes: int

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.key = backend.secrets

    def errors(self) -> AbstractContextManager[None]:
        """The SDK's exceptions mapped as the one-by-one path maps them (backends/reading.py `sdk_errors`)."""
        errors: AbstractContextManager[None] = self.backend.errors()
        return errors

    def answer(self, key: str, reply: object) -> Outcome:
        """One result's reply, read as the one-by-one path reads it; a paid answer is kept whatever reading it did
        (backends/reading.py), an unreadable one as a malformed answer."""
        reported = reported_error(reply, self.key)  # a gateway's error in a 200: no answer, none kept
        if reported is not None:
            return Outcome(key, None, str(reported))
        try:
            return Outcome(key, self.backend.completion_from(key, reply))
        except (MalformedReply, PermanentError) as e:
            return Outcome(key, None, f"malformed response: {redact(str(e), self.key)[:200]}")
        except Exception as e:
            return Outcome(key, unreadable(key, json.dumps(reply, default=str).encode(), self.key, e))

    def failed(self, key: str, message: str) -> Outcome:
        """A request the batch did not answer, with what the provider said (secrets redacted)."""
        return Outcome(key, None, redact(message, self.key))


def client_for(backend: Any, base_url: str) -> Any:
    """The backend's SDK client for the server a batch went to (one client per --base-url), recorded in the cache
    file with the URL's credentials redacted (submit.py)."""
    for url, client in zip(backend.base_urls, backend.clients, strict=True):
        if redact(url, backend.secrets) == base_url:
            return client
    raise HarnessError(f"a batch was recorded for {base_url}, which this run does not use (pass the same --base-url)")
