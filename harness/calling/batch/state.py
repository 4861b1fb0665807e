"""What the steps of one --batch invocation share: the groups to submit, what came back, and the retry rule for the
provider's API calls (`with_retries`).

Its own module so that flow.py (planning), submit.py and collect.py all read it without importing each other.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt

from harness.calling.backends.base import RemoteBackend, RetryableError
from harness.calling.batch.base import Provider
from harness.calling.batch.store import BatchStore
from harness.calling.cache import ResponseCache
from harness.calling.options import RetryPolicy
from harness.calling.pricing import Price
from harness.config.settings import BatchOptions
from harness.types import Completion, Request

Log = Callable[[str], None]


@dataclass
class Gathered:
    """What one invocation got back, by cache key."""

    keys: dict[int, dict[str, str]] = field(default_factory=dict)  # job index -> request id -> key
    cached: set[str] = field(default_factory=set)  # answered by the cache before anything was sent
    answers: dict[str, Completion] = field(default_factory=dict)  # collected now (billed now)
    errors: dict[str, str] = field(default_factory=dict)  # failed in a batch during this invocation
    submitted: int = 0  # requests this invocation submitted
    batch_ids: list[str] = field(default_factory=list)  # the provider ids of every batch waited on
    conflicts: dict[str, str] = field(default_factory=dict)  # key -> what its result file said besides the answer kept
    unknown: int = 0  # result lines naming requests their batch never held (ignored)


@dataclass
class Group:
    """Jobs that share a backend identity, and so their cache keys: submitted together."""

    backend: RemoteBackend
    provider: Provider
    price: Price | None
    bodies: dict[str, dict[str, Any]] = field(default_factory=dict)  # key -> body, for keys still to be sent
    prompts: dict[str, Request] = field(default_factory=dict)  # key -> request (cost estimate)


@dataclass
class Context:
    """What the steps of one invocation share."""

    options: BatchOptions
    retry: RetryPolicy
    cache: ResponseCache
    store: BatchStore
    log: Log
    verbose: bool  # print every poll, not only submissions and collections
    out: Gathered = field(default_factory=Gathered)


T = TypeVar("T")


async def with_retries(policy: RetryPolicy, call: Callable[[], Awaitable[T]]) -> T:
    """One batch API call under the run's retry policy (429, 5xx, dropped connections, timeouts)."""
    retrying = AsyncRetrying(
        stop=stop_after_attempt(policy.max_retries + 1),
        wait=policy.wait,
        retry=retry_if_exception_type(RetryableError),
        reraise=True,
    )
    async for attempt in retrying:
        with attempt:
            return await call()
    raise AssertionError("unreachable: tenacity reraises the last error")
