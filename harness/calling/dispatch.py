"""Send requests through a backend and account for every one exactly once.

The one place for the cache, concurrency, retries, timeouts and the spending limit (backends do none of
it). Order of events for each request: cache lookup -> (API backends) wait for a slot, reserve its
worst-case cost, send with retries -> commit the answer to the cache -> `on_done`. A request that fails
for good becomes an `error` Completion: it is reported, never cached, and retried by the next run.

Only an error that every request would meet stops the run (401/403/404, a 400 naming the request's shape):
no new request starts, the ones in flight finish their current attempt and their answers are cached. Which
errors stop a run depends on what the provider said, never on which request came first, so the outcome
does not depend on order or concurrency.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, cast

from tenacity import AsyncRetrying, RetryCallState, RetryError, retry_if_exception_type
from tenacity.wait import wait_random_exponential

from harness.calling.backends.base import Backend, MalformedReply, PermanentError, RemoteBackend, RetryableError
from harness.calling.budget import Budget
from harness.calling.cache import ResponseCache, request_key
from harness.calling.pricing import Price
from harness.types import Completion, HarnessError, Request

OnDone = Callable[[Completion], None]
MALFORMED_TRIES = 3  # a reply we cannot read is retried, but a server that only sends those is given up on


@dataclass(frozen=True)
class RetryPolicy:
    """Our one retry policy: exponential backoff with full jitter, or the provider's retry-after (capped)."""

    max_retries: int = 8  # retries after the first attempt
    timeout: float = 120.0  # seconds per attempt
    backoff_initial: float = 1.0
    backoff_max: float = 60.0
    retry_after_cap: float = 120.0  # never sleep longer than this, whatever the provider says

    def wait(self, state: RetryCallState) -> float:
        """Seconds before the next attempt."""
        error = state.outcome.exception() if state.outcome is not None else None
        if isinstance(error, RetryableError) and error.retry_after is not None:
            return min(error.retry_after, self.retry_after_cap)
        return float(wait_random_exponential(multiplier=self.backoff_initial, max=self.backoff_max)(state))


@dataclass(frozen=True)
class DispatchOptions:
    concurrency: int = 16  # API requests in flight
    retry: RetryPolicy = RetryPolicy()
    cache: ResponseCache | None = None  # None: --no-cache
    refresh: bool = False  # --refresh: ignore stored answers, store the new ones
    max_cost: float | None = None  # US dollars this invocation may spend (API backends)
    price: Price | None = None
    count_prompt: Callable[[str], int] | None = None  # prompt tokens as --dry-run counts them (for --max-cost)


@dataclass
class DispatchStats:
    """What one invocation did; goes into metrics.json under "dispatch"."""

    requests: int = 0
    cache: str = "off"  # "on", "refresh" or "off"
    cache_hits: int = 0
    cache_misses: int = 0
    attempts: int = 0  # API calls made, retries included
    retries: int = 0
    errors: int = 0
    deterministic_errors: int = 0  # errors a rerun would repeat (context_length_exceeded, ...): not worth retrying
    malformed: int = 0  # replies that could not be read (each retried)
    not_sent_max_cost: int = 0
    spent_usd: float | None = None  # this invocation's new spending (cached answers are free)
    seconds: float = 0.0
    first_errors: list[str] = field(default_factory=list)  # a few messages, for the report line
    first_deterministic_errors: list[str] = field(default_factory=list)
    cache_deferred: int = 0  # answers that met a locked cache file and were written later
    cache_unsaved: int = 0  # answers the locked cache file never took: in this run's results only
    batch: dict[str, Any] | None = None  # --batch: batches waited on, requests submitted and answered (harness/batch)
    paid_by_batch: set[str] = field(default_factory=set)  # request ids whose answer was billed at the batch price

    def record(self) -> dict[str, Any]:
        """{"cache": ..., "dispatch": ...} for metrics.json."""
        d = asdict(self)
        d.pop("paid_by_batch")  # ids, not a number: usage (harness/calling/calls.py) prices them
        if d["batch"] is None:
            d.pop("batch")
        cache = {"mode": d.pop("cache"), "hits": d.pop("cache_hits"), "misses": d.pop("cache_misses")}
        deferred, unsaved = d.pop("cache_deferred"), d.pop("cache_unsaved")
        if deferred or unsaved:
            cache |= {"deferred": deferred, "unsaved": unsaved}
        if unsaved:
            cache["note"] = (
                f"{unsaved} answers could not be written to the locked cache file: they are in this run's "
                "results, but a rerun would send them again"
            )
        return {"cache": cache, "dispatch": d}


class _Dispatcher:
    def __init__(self, backend: Backend, options: DispatchOptions, on_done: OnDone, stats: DispatchStats) -> None:
        self.backend, self.options, self.on_done, self.stats = backend, options, on_done, stats
        self.cache = options.cache if getattr(backend, "cacheable", True) else None
        self.done: dict[str, Completion] = {}
        self.keys: dict[str, str] = {}
        self.fatal: str | None = None
        self.budget = (
            Budget(options.max_cost, options.price, options.count_prompt or (lambda text: len(text.encode())))
            if options.max_cost is not None and options.price is not None
            else None
        )

    def finish(self, completion: Completion) -> None:
        if completion.request_id in self.done:
            # A backend bug, not a model answer: refuse it rather than score a query twice.
            raise RuntimeError(f"backend {self.backend.name} answered repeated id {completion.request_id!r}")
        self.done[completion.request_id] = completion
        if completion.error is None:
            if self.cache is not None and not completion.cached:
                self.cache.put(self.keys[completion.request_id], completion, self.backend.name, self.backend.model)
        else:
            self.stats.errors += 1
            first = self.stats.first_errors
            if completion.deterministic_error:
                self.stats.deterministic_errors += 1
                first = self.stats.first_deterministic_errors
            if len(first) < 3:
                first.append(completion.error)
        self.on_done(completion)

    def lookup(self, requests: Sequence[Request]) -> list[Request]:
        """Answer what the cache can; return the rest."""
        if self.cache is None:
            return list(requests)
        self.stats.cache = "refresh" if self.options.refresh else "on"
        missing = []
        for r in requests:
            self.keys[r.id] = request_key(self.backend, r)
            hit = None if self.options.refresh else self.cache.get(self.keys[r.id], r.id)
            if hit is None:
                self.stats.cache_misses += 1
                missing.append(r)
            else:
                self.stats.cache_hits += 1
                self.finish(hit)
        return missing

    async def run_local(self, requests: list[Request]) -> None:
        wanted = {r.id for r in requests}
        async for completion in self.backend.complete(requests):
            if completion.request_id not in wanted:
                raise RuntimeError(f"backend {self.backend.name} answered unknown id {completion.request_id!r}")
            self.finish(completion)

    async def run_remote(self, requests: list[Request]) -> None:
        backend = cast(RemoteBackend, self.backend)
        queue = deque(requests)

        async def worker() -> None:
            while queue and self.fatal is None:  # after a fatal error, in-flight requests finish; none start
                await self.send_one(backend, queue.popleft())

        n = max(1, min(self.options.concurrency, len(queue)))
        workers = [asyncio.create_task(worker()) for _ in range(n)]
        try:
            results = await asyncio.gather(*workers, return_exceptions=True)
        finally:
            await backend.aclose()
        for result in results:
            if isinstance(result, BaseException):
                raise result

    async def send_one(self, backend: RemoteBackend, request: Request) -> None:
        reserved = 0.0
        if self.budget is not None:
            reserved = self.budget.worst_case(request, backend.output_budget(request))
            if not self.budget.reserve(reserved):
                self.stats.not_sent_max_cost += 1
                limit = f"${self.budget.max_cost:g}"
                self.finish(Completion(request.id, None, error=f"not sent: --max-cost {limit} would be exceeded"))
                return
        completion = await self.attempt(backend, request)
        if self.budget is not None:
            answered = completion is not None and completion.error is None
            self.budget.settle(reserved, completion.usage if answered and completion else None)
        if completion is not None:
            self.finish(completion)

    async def attempt(self, backend: RemoteBackend, request: Request) -> Completion | None:
        """The request's Completion (an answer or an error), or None when the whole run must stop."""
        try:
            return await self.send_with_retries(backend, request)
        except PermanentError as e:
            if e.fatal:  # 401/403/404, or a 400 about the request's shape: every request would fail so
                self.fatal = self.fatal or f"{backend.name} model {backend.model!r}: {e}"
                return None
            return Completion(request.id, None, error=str(e), deterministic_error=True)
        except Exception as e:  # an SDK surprise must not lose the query: record it, a rerun retries it
            return Completion(request.id, None, error=f"unexpected {type(e).__name__}: {e}")

    async def send_with_retries(self, backend: RemoteBackend, request: Request) -> Completion:
        """An answer, or an error Completion once retries are spent; PermanentError passes through."""
        policy = self.options.retry
        tries = malformed = 0

        def count_retry(state: RetryCallState) -> None:
            self.stats.retries += 1

        def stop(state: RetryCallState) -> bool:
            # No retry once the run is stopping; at most MALFORMED_TRIES unreadable replies per request.
            return self.fatal is not None or malformed >= MALFORMED_TRIES or tries > policy.max_retries

        retrying = AsyncRetrying(
            stop=stop, wait=policy.wait, retry=retry_if_exception_type(RetryableError), before_sleep=count_retry
        )
        try:
            async for attempt in retrying:
                with attempt:
                    tries += 1
                    self.stats.attempts += 1
                    try:
                        async with asyncio.timeout(policy.timeout):
                            return await backend.send(request)
                    except TimeoutError:
                        raise RetryableError(f"no answer within {policy.timeout:g}s (--timeout)") from None
                    except MalformedReply:
                        malformed += 1
                        self.stats.malformed += 1
                        raise
        except RetryError as e:
            last = e.last_attempt.exception()
            why = "not retried: the run stopped" if self.fatal is not None else f"gave up after {tries} tries"
            return Completion(request.id, None, error=f"{why}: {last}")
        raise AssertionError("unreachable: tenacity returns or raises")


async def _collect(
    backend: Backend, requests: Sequence[Request], on_done: OnDone, options: DispatchOptions, stats: DispatchStats
) -> dict[str, Completion]:
    d = _Dispatcher(backend, options, on_done, stats)
    missing = d.lookup(requests)
    if missing:
        if getattr(backend, "remote", False):  # a local backend that predates `remote` is local
            await d.run_remote(missing)
        else:
            await d.run_local(missing)
    if d.fatal is not None:
        raise HarnessError(f"{d.fatal} (answers received so far are cached; nothing else was written)")
    for r in requests:
        if r.id not in d.done:
            d.finish(Completion(r.id, None, error=f"backend {backend.name} returned no completion"))
    return d.done


def complete_all(
    backend: Backend,
    requests: Sequence[Request],
    on_done: OnDone = lambda c: None,
    options: DispatchOptions | None = None,
    stats: DispatchStats | None = None,
) -> dict[str, Completion]:
    """One Completion per request id; `on_done` is called as each arrives (progress, cost); `stats` is filled in."""
    options = options or DispatchOptions()
    stats = stats if stats is not None else DispatchStats()
    stats.requests = len(requests)
    callback: OnDone = on_done
    if options.price is not None and getattr(backend, "remote", False):
        stats.spent_usd = 0.0

        def on_done_costed(c: Completion) -> None:
            if not c.cached and options.price is not None:
                stats.spent_usd = (stats.spent_usd or 0.0) + options.price.cost_of(c.usage)
            on_done(c)

        callback = on_done_costed
    started = time.perf_counter()
    try:
        return asyncio.run(_collect(backend, requests, callback, options, stats))
    finally:
        stats.seconds = round(time.perf_counter() - started, 3)
