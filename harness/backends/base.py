"""The one backend interface. Backends are batch-shaped, async, and know nothing of C-STS.

Two kinds, told apart by the class attribute `remote`:

- Local backends (`remote = False`: offline baselines, vllm, hf) implement `complete(requests)`. The
  dispatcher (harness/dispatch.py) calls it ONCE with every request the cache could not answer, so a
  local engine sees the whole batch (vLLM's continuous batching), and yields one Completion per request
  in any order.
- API backends (`remote = True`: openai, anthropic) implement `send(request)`: one attempt at one
  request, raising `RetryableError` or `PermanentError` (below) instead of SDK exceptions. The
  dispatcher calls it per request under its concurrency limit, timeout and retry policy. Retries,
  concurrency and caching live there, in one place, never inside a backend.

Every backend goes through the same response cache (harness/cache.py). Its key is a hash of
`backend.name`, `backend.model`, `backend.describe()` and the request's prompt and decoding fields, so
`describe()` must name everything besides the prompt that decides the answer (endpoint, decoding
parameters, chat template on or off, ...) and nothing that changes between identical runs (no
timestamps, no process ids, never a secret). A backend whose answers are not worth storing declares
`cacheable = False` (the offline baselines: pure functions of the prompt).
"""

from __future__ import annotations

import contextlib
import email.utils
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Generic, Protocol, TypeVar

from harness.types import Completion, Request


class Backend(Protocol):
    """Turns requests into completions, in any order; one Completion per Request id."""

    name: str
    model: str
    remote: bool

    def complete(self, requests: Sequence[Request]) -> AsyncIterator[Completion]:
        """Yield a Completion for every request (an `error` Completion when it failed for good)."""
        ...

    def describe(self) -> dict[str, object]:
        """What is sent and how (decoding parameters, endpoint), for config.json and the cache key. No secrets."""
        ...


class RemoteBackend(Backend, Protocol):
    """An API backend: the dispatcher calls `send` per request, with its own retries, timeout and limit."""

    async def send(self, request: Request) -> Completion:
        """One attempt. Raises RetryableError or PermanentError; a returned Completion is a model answer."""
        ...

    def output_budget(self, request: Request) -> int:
        """The most output tokens this request can be billed for (for --max-cost and --dry-run)."""
        ...

    async def aclose(self) -> None:
        """Close the HTTP clients (inside the event loop that used them)."""
        ...


class RetryableError(Exception):
    """A failure worth another try: 408/409/429/5xx/529, a dropped connection, a timeout."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after  # seconds the provider asked us to wait, if it said


class PermanentError(Exception):
    """A failure that another try would repeat (400, a malformed reply). `fatal`: stop the whole run (401/403/404)."""

    def __init__(self, message: str, fatal: bool = False) -> None:
        super().__init__(message)
        self.fatal = fatal


RETRYABLE_STATUS = frozenset({408, 409, 429, 529})
FATAL_STATUS = frozenset({401, 403, 404})  # a bad key, no access, no such model: every request would fail


def status_error(status: int, message: str, headers: Mapping[str, str]) -> RetryableError | PermanentError:
    """Map an HTTP error status to our policy: retry only 408/409/429/5xx/529, stop the run on 401/403/404."""
    text = f"HTTP {status}: {message}"
    if status in RETRYABLE_STATUS or status >= 500:
        return RetryableError(text, retry_after_seconds(headers))
    return PermanentError(text, fatal=status in FATAL_STATUS)


def retry_after_seconds(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds to wait from `retry-after-ms` (OpenAI, Anthropic) or `retry-after` (seconds or an HTTP date)."""
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def redact(text: str, secret: str | None) -> str:
    """Remove a secret from a message before it is recorded or printed (providers echo bad keys back)."""
    if secret and len(secret) >= 4:
        text = text.replace(secret, "[redacted]")
    return text


def timeout_error(e: BaseException, key: str | None) -> RetryableError:
    """A timeout from an SDK: the SDKs' aiohttp transport also reports a refused connection as a (connect)
    timeout, so say which it was; both are retried."""
    cause = e.__cause__
    if cause is not None and "connect" in type(cause).__name__.lower():
        return RetryableError(f"connection error: {redact(str(cause), key)}")
    return RetryableError("request timed out")


C = TypeVar("C")


class ClientPool(Generic[C]):
    """One SDK client per base URL; each attempt leases the least busy one (round-robin among equals)."""

    def __init__(self, clients: Sequence[C]) -> None:
        self.clients = list(clients)
        self._in_flight = [0] * len(self.clients)
        self._turn = 0

    @contextlib.contextmanager
    def lease(self) -> Iterator[C]:
        n = len(self.clients)
        start, self._turn = self._turn, (self._turn + 1) % n
        i = min(((start + k) % n for k in range(n)), key=lambda j: self._in_flight[j])
        self._in_flight[i] += 1
        try:
            yield self.clients[i]
        finally:
            self._in_flight[i] -= 1

    async def aclose(self) -> None:
        """Close every client (inside the event loop that used them)."""
        for c in self.clients:
            await c.close()  # type: ignore[attr-defined]


async def one_attempt_each(
    send: Callable[[Request], Awaitable[Completion]], requests: Sequence[Request]
) -> AsyncIterator[Completion]:
    """`complete` for API backends used without dispatch: one attempt per request, in order, errors as Completions."""
    for r in requests:
        try:
            yield await send(r)
        except (RetryableError, PermanentError) as e:
            yield Completion(r.id, None, error=str(e))
