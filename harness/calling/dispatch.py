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
import gc
import sys
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace

from harness.calling.attempts import Attempts, Reachability
from harness.calling.backends.base import Backend, LocalBackend, PermanentError, RemoteBackend
from harness.calling.backends.reading import holds
from harness.calling.batch.run import answered_by_batch, batch_call, batchable
from harness.calling.budget import Budget
from harness.calling.cache import ResponseCache
from harness.calling.cache_keys import KeyMaker, served_params
from harness.calling.limiter import Limiter
from harness.calling.options import DispatchOptions, DispatchStats
from harness.calling.progress import Bar
from harness.calling.redaction import redact, redact_completion, without_prompt
from harness.calling.server_queue import QUEUE_POLL
from harness.types import Completion, HarnessError, Request

OnDone = Callable[[Completion], None]


class _Dispatcher:
    def __init__(self, backend: Backend, options: DispatchOptions, on_done: OnDone, stats: DispatchStats) -> None:
        self.backend, self.options, self.on_done, self.stats = backend, options, on_done, stats
        self.cache = options.cache if isinstance(backend, RemoteBackend) or backend.cacheable else None
        self.done: dict[str, Completion] = {}
        self.keys: dict[str, str] = {}
        self.address_keys: dict[str, str] = {}  # the servers' addresses' keys, where `keys` names what they serve
        self.fatal: str | None = None
        self.secrets, self.prompts = backend.secrets if isinstance(backend, RemoteBackend) else (), dict[str, str]()
        self.limiter = Limiter(options.concurrency)  # run_remote makes the run's own, with every setting
        self.reach = Reachability(options.retry.wait_for_server)
        self.budget = (
            Budget(options.max_cost, options.price, options.count_prompt or (lambda text: len(text.encode())))
            if options.max_cost is not None and options.price is not None
            else None
        )

    def finish(self, completion: Completion) -> None:
        if completion.request_id in self.done:
            # A backend bug, not a model answer: refuse it rather than score a query twice.
            raise RuntimeError(f"backend {self.backend.name} answered repeated id {completion.request_id!r}")
        self.done[completion.request_id] = completion = self.clean(completion)
        if completion.error is None:
            self.stats.usage_unreported += not completion.cached and not completion.usage.reported
            if self.cache is not None and not completion.cached:
                self.cache.put(self.keys[completion.request_id], completion, self.backend.name, self.backend.model)
                if (address := self.address_keys.get(completion.request_id)) is not None:
                    self.cache.put(address, completion, self.backend.name, self.backend.model)
        else:
            self.stats.errors += 1
            first = self.stats.first_errors
            if completion.deterministic_error:
                self.stats.deterministic_errors += 1
                first = self.stats.first_deterministic_errors
            if len(first) < 3:
                first.append(completion.error)
        self.on_done(completion)

    def clean(self, c: Completion) -> Completion:
        """No secret in any string (calling/redaction.py), no quote of the prompt in an error, before it is kept."""
        if c.error is not None and (prompt := self.prompts.get(c.request_id)):
            c = replace(c, error=without_prompt(c.error, prompt))
        return redact_completion(c, self.secrets)

    def lookup(self, requests: Sequence[Request], served: object = None) -> list[Request]:
        """Answer what the cache can; return the rest. `served`: what the servers say they serve (backend.served()),
        the key's name for them; each answer is also stored under their addresses' key, which a later run reads
        when the servers cannot be asked (down): their answers, as before, without them."""
        self.prompts = {r.id: r.prompt for r in requests}
        if self.cache is None:
            return list(requests)
        self.stats.cache = "refresh" if self.options.refresh else "on"
        missing = []
        by_address = KeyMaker(self.backend)
        if served is not None:
            key = KeyMaker(self.backend, served_params(self.backend.describe(), served))
            self.address_keys = {r.id: by_address(r) for r in requests}
        else:
            key = by_address
        self.keys = {r.id: key(r) for r in requests}
        hits = {} if self.options.refresh else self.cache.get_many(self.keys)
        for r in requests:
            hit = hits.get(r.id)
            if hit is None or not holds(hit, self.options.max_reply_mb):  # a verdict of a smaller --max-reply-mb
                self.stats.cache_misses += 1
                missing.append(r)
            else:
                self.stats.cache_hits += 1
                self.finish(hit)
        return missing

    async def run_local(self, backend: LocalBackend, requests: list[Request]) -> None:
        wanted = {r.id for r in requests}
        async for completion in backend.complete(requests):
            if completion.request_id not in wanted:
                raise RuntimeError(f"backend {self.backend.name} answered unknown id {completion.request_id!r}")
            self.finish(completion)

    async def run_remote(self, backend: RemoteBackend, requests: list[Request]) -> None:
        queue = deque(requests)
        o = self.options
        self.limiter = limiter = Limiter(o.concurrency, o.rpm, o.tpm, timeout=o.retry.timeout)
        watch: asyncio.Task[None] | None = None
        if (slots := await backend.capacity()) is not None:  # llama.cpp's /props: how many it serves at once
            limiter.serves(slots)
        elif (said := await backend.queue()) is not None:  # vLLM's /metrics: its queue, read while requests are out
            limiter.server_queue(said)
            watch = asyncio.create_task(self.watch_queue(backend, limiter))

        async def worker() -> None:
            while queue and not self.stopping():  # after a fatal error, in-flight requests finish; none start
                await self.send_one(backend, queue.popleft())

        # One worker per slot of the ceiling: the limiter decides how many of them are sending at a time, and a
        # worker waiting out a retry holds no slot.
        n = min(self.options.concurrency, len(queue))  # both at least 1: requests are missing, --concurrency >= 1
        workers = [asyncio.create_task(worker()) for _ in range(n)]
        try:
            results = await asyncio.gather(*workers, return_exceptions=True)
        finally:
            if watch is not None:
                watch.cancel()
                await asyncio.gather(watch, return_exceptions=True)
            self.stats.limiter = asdict(limiter.report())
            await backend.aclose()
        for result in results:
            if isinstance(result, BaseException):
                raise result

    @staticmethod
    async def watch_queue(backend: RemoteBackend, limiter: Limiter) -> None:
        """The server's queue every QUEUE_POLL seconds while requests are out, to the limiter (server_queue.py); a
        reading that fails says nothing (the last one goes stale, and the latencies decide again)."""
        while True:
            await asyncio.sleep(QUEUE_POLL)
            if limiter.out and (said := await backend.queue()) is not None:
                limiter.server_queue(said)

    async def send_one(self, backend: RemoteBackend, request: Request) -> None:
        if self.budget is None:
            completion = await self.attempt(backend, request)
        else:
            completion = await self.within(self.budget, backend, request)
        if completion is not None:
            self.finish(completion)

    async def within(self, budget: Budget, backend: RemoteBackend, request: Request) -> Completion | None:
        """--max-cost: the request sent only if its worst case fits what is left, then charged what it used (an
        error's usage is nothing; no Completion, a run stopping: nothing)."""
        reserved = budget.worst_case(request, backend.output_budget(request))
        if not budget.reserve(reserved):
            self.stats.not_sent_max_cost += 1
            return Completion(request.id, None, error=f"not sent: --max-cost ${budget.max_cost:g} would be exceeded")
        completion = await self.attempt(backend, request)
        budget.settle(reserved, completion.usage if completion is not None else None)
        return completion

    def stopping(self) -> bool:
        """A fatal error, or a full disk under the cache: every further answer would be paid for and not kept."""
        return self.fatal is not None or (self.cache is not None and self.cache.disk_full is not None)

    async def attempt(self, backend: RemoteBackend, request: Request) -> Completion | None:
        """The request's Completion (an answer or an error), or None when the whole run must stop."""
        try:
            attempts = Attempts(backend, request, self.options, self.stats, self.limiter, self.stopping, self.reach)
            return await attempts.run()
        except PermanentError as e:
            if e.fatal:  # 401/403/404, a 400 about the request's shape, no server: every request would fail so
                said = redact(without_prompt(str(e), request.prompt), self.secrets)
                self.fatal = self.fatal or f"{backend.name} model {backend.model!r}: {said}"
                return None
            return Completion(request.id, None, error=str(e), deterministic_error=True)
        except Exception as e:  # an SDK surprise must not lose the query: record it, a rerun retries it
            return Completion(request.id, None, error=f"unexpected {type(e).__name__}: {e}")


async def _collect(
    backend: Backend, requests: Sequence[Request], on_done: OnDone, options: DispatchOptions, stats: DispatchStats
) -> dict[str, Completion]:
    d = _Dispatcher(backend, options, on_done, stats)
    served = await backend.served() if d.cache is not None and isinstance(backend, RemoteBackend) else None
    if served is not None:
        stats.cache_served = sorted({s["llama.cpp"]["model_path"] for s in served})
    missing = d.lookup(requests, served)
    if missing:
        match backend:  # the two kinds of backend (harness/calling/backends/base.py)
            case RemoteBackend():
                await d.run_remote(backend, missing)
            case LocalBackend():
                await d.run_local(backend, missing)
    elif isinstance(backend, RemoteBackend):
        await backend.aclose()  # the connection that asked what the servers serve (run_remote closes its own)
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
    options, stats = options or DispatchOptions(), stats if stats is not None else DispatchStats()
    stats.requests = len(requests)
    callback: OnDone = on_done
    if (price := options.price) is not None and isinstance(backend, RemoteBackend):
        stats.spent_usd = 0.0

        def callback(c: Completion) -> None:
            if not c.cached:
                stats.spent_usd = (stats.spent_usd or 0.0) + price.cost_of(c.usage)
            on_done(c)

    started = time.perf_counter()
    gc.freeze()  # what exists before the run (modules, prompts) outlives it: no collection walks it (benchmarks.md)
    try:
        with asyncio.Runner(loop_factory=_loop_factory()) as runner:
            return runner.run(_collect(backend, requests, callback, options, stats))
    finally:
        gc.unfreeze()
        if options.cache is not None:
            options.cache.flush()  # answers of the loop's last turn (harness/calling/cache.py `put`)
        stats.seconds = round(time.perf_counter() - started, 3)


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop where it is installed: its event loop costs about half the CPU per request of asyncio's own."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


@dataclass(frozen=True)
class Replies:
    """What `call` got: one Completion per request id and, for replies that are scores, each text's
    first-number parse, made once as it arrived (the progress bar counts the invalid ones; scoring reuses it)."""

    completions: dict[str, Completion]
    parsed: dict[str, float | None]


def call(
    backend: Backend,
    requests: Sequence[Request],
    options: DispatchOptions,
    stats: DispatchStats,
    desc: str | None = None,
    parse: Callable[[str | None], float | None] | None = None,
) -> Replies:
    """A run's calling step: the cache file opened (for a cacheable backend), a progress bar, --batch or one by
    one, and one line instead of a run folder when every request failed. `parse` (harness/scoring/parsing.py
    `parse_score`) for score replies; None for answers and embeddings, whose texts are not scores."""
    cacheable = isinstance(backend, RemoteBackend) or backend.cacheable  # offline baselines: nothing to keep
    cache = ResponseCache(options.cache_path) if options.cache_path is not None and cacheable else None
    options = replace(options, cache=cache)
    batch = options.batch is not None and batchable(backend)
    counts = {"invalid": 0, "errors": 0} if parse else {"errors": 0}
    parsed: dict[str, float | None] = {}
    bar = Bar(requests, desc or backend.model, disable=not options.progress or batch)
    if isinstance(backend, LocalBackend):
        backend.on_work = bar.begin  # the estimate's clock starts once the model is loaded (calling/progress.py)
    with bar:

        def on_done(c: Completion) -> None:
            if c.error is not None:
                counts["errors"] += 1
            elif parse is not None and (parsed.setdefault(c.request_id, parse(c.text))) is None:
                counts["invalid"] += 1
            if not bar.disable:  # --no-progress: no bar to format a postfix for, 25,000 times in a grid
                spent = stats.spent_usd  # complete_all sums it (API backends with a price) before calling this
                bar.done(c, counts | ({"cost": f"${spent:.4f}"} if spent is not None else {}))

        try:
            if batch:  # --batch: harness/calling/batch, which prints its own progress
                done = batch_call(backend, requests, options, stats)  # type: ignore[arg-type]
            else:
                done = complete_all(backend, requests, on_done, options, stats)
                if cache is not None and isinstance(backend, RemoteBackend):
                    stats.paid_by_batch = answered_by_batch(cache.path, backend, requests, done)
        finally:
            if cache is not None:
                cache.close()
                stats.cache_deferred, stats.cache_unsaved = cache.deferred, cache.unsaved
                stats.cache_problem = cache.problem
    if cache is not None and cache.disk_full is not None:
        raise HarnessError(
            f"{cache.disk_full}: the answers that came before it filled are stored, {cache.unsaved} that came after "
            "could not be kept, no further request was sent and no results were written; free space (or give "
            "--cache another file) and rerun the same command: it sends only the requests whose answers are not stored"
        )
    if stats.cache_unsaved:
        print(
            f"warning: {cache.problem if cache else 'the cache'}: {stats.cache_unsaved} answers are in this run's "
            "results but not in the cache",
            file=sys.stderr,
        )
    if requests and all(c.error is not None for c in done.values()):
        # Nothing came back (an unreachable server, a wrong --base-url, --max-cost too low): one line and no
        # run folder beats a folder of errors. Nothing is lost: there was nothing to keep.
        first = next(iter(done.values())).error
        raise HarnessError(f"all {len(requests)} requests to {backend.name} model {backend.model!r} failed: {first}")
    return Replies(done, parsed)
