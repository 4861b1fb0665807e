"""--batch, step by step: what the cache cannot answer is claimed, submitted, polled and collected.

Order of events, each committed before the next can happen (harness/calling/batch/store.py names the stages):
claim the requests (planned) -> upload (OpenAI; uploaded) -> mark `creating` -> create -> record the
batch id (submitted) -> poll -> stream the results, each answer committed to the cache as it arrives
-> mark the batch collected with its per-request errors. A run killed anywhere is resumed by the same
command: claims of a dead process that never reached the provider are dropped and resubmitted, a lost
create call is looked up at the provider, submitted batches are polled, a half-read result file is read
again (answers already cached are simply written again). A request is never in two open batches.

This module plans (cache lookup, grouping, --max-cost); harness/calling/batch/submit.py recovers and submits;
harness/calling/batch/collect.py polls and collects.
"""

from __future__ import annotations

import importlib
import json
import sqlite3
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from harness.calling.backends import BACKENDS
from harness.calling.backends.base import RemoteBackend
from harness.calling.batch.base import Provider
from harness.calling.batch.collect import wait
from harness.calling.batch.state import Context, Gathered, Group, Log
from harness.calling.batch.store import BatchStore
from harness.calling.batch.submit import recover, submit
from harness.calling.cache import ResponseCache
from harness.calling.cache_file import problem
from harness.calling.cache_keys import request_key
from harness.calling.options import RetryPolicy
from harness.calling.pricing import Price
from harness.config.settings import BatchOptions
from harness.prompting.tokens import CHAT_OVERHEAD_TOKENS, counter
from harness.types import HarnessError, Request


def provider_for(backend: RemoteBackend) -> Provider | None:
    """The batch endpoint of a backend: its `batch` in BACKENDS, imported when used (embeddings and local models
    have none; a backend's name is its class's, so the provider gets the backend it was written for)."""
    d = BACKENDS.get(backend.name)
    if d is None or d.batch is None:
        return None
    module, cls = d.batch.split(":")
    provider: Callable[[RemoteBackend], Provider] = getattr(importlib.import_module(module), cls)
    return provider(backend)


@dataclass(frozen=True)
class Job:
    """Requests for one backend: a run, or one cell of a sweep."""

    backend: RemoteBackend
    requests: Sequence[Request]
    price: Price | None = None


class Session:
    """One invocation's batch work over a cache file."""

    def __init__(
        self,
        options: BatchOptions,
        retry: RetryPolicy,
        cache: ResponseCache,
        refresh: bool = False,
        max_cost: float | None = None,
        log: Log | None = None,
        verbose: bool = True,
    ) -> None:
        self.refresh, self.max_cost = refresh, max_cost
        log = log or (lambda line: print(line, file=sys.stderr, flush=True))
        self.ctx = Context(options, retry, cache, BatchStore(cache.path), log, verbose)
        self.store = self.ctx.store

    def close(self) -> None:
        self.store.close()

    async def gather(self, jobs: Sequence[Job]) -> Gathered:
        """Answer every job's requests from the cache or through batches; BatchesPending if some still run."""

        groups = self.groups(jobs)
        waiting: dict[str, Group] = {}  # local id -> its group
        try:
            for group in groups.values():
                waiting |= dict.fromkeys(await recover(self.ctx, group), group)
            self.check_cost(groups)
            for group in groups.values():
                waiting |= dict.fromkeys(await submit(self.ctx, group), group)
            await wait(self.ctx, waiting)
        except sqlite3.Error as e:  # the batch records' file (the cache's): its disk full, or locked for too long
            raise HarnessError(
                f"{problem(self.ctx.cache.path, e)}: the batch records could not be updated; what they hold is kept, "
                "and the same command run again polls and collects the batches already submitted"
            ) from None
        finally:
            for group in groups.values():
                await group.backend.aclose()
        return self.ctx.out

    def groups(self, jobs: Sequence[Job]) -> dict[str, Group]:
        """Jobs grouped by backend identity, each with the bodies of the requests the cache cannot answer."""
        out, cache, store = self.ctx.out, self.ctx.cache, self.ctx.store
        groups: dict[str, Group] = {}
        for index, job in enumerate(jobs):
            b = job.backend
            identity = json.dumps([b.name, b.model, b.describe()], sort_keys=True, default=str)
            if identity not in groups:
                provider = provider_for(b)
                if provider is None:
                    raise HarnessError(f"--batch: the {b.name} backend has no batch endpoint (openai, anthropic do)")
                groups[identity] = Group(b, provider, job.price)
            group = groups[identity]
            keys = out.keys.setdefault(index, {})
            for r in job.requests:
                key = keys[r.id] = request_key(b, r)
                if key not in group.bodies:
                    group.bodies[key] = group.backend.body(r)  # type: ignore[attr-defined]
                    group.prompts[key] = r
        for group in groups.values():
            keys_all = list(group.bodies)
            if not self.refresh:
                out.cached.update(k for k in keys_all if cache.get(k, k) is not None)
            # What a batch settled earlier in this invocation (a sweep's first pass) is final until a rerun.
            for key, error in store.settled_since(keys_all, self.ctx.options.started).items():
                if error is not None:
                    out.errors[key] = error
                elif cache.get(key, key) is not None:
                    out.cached.add(key)
            for key in out.cached | out.errors.keys():
                group.bodies.pop(key, None)
        return groups

    def check_cost(self, groups: dict[str, Group]) -> None:
        """--max-cost against what the new batches could cost at the batch price, before anything is sent.

        The same estimate as the dry run's batch figure: prompt tokens counted as it counts them, every
        answer at its full output budget."""
        if self.max_cost is None:
            return
        total = 0.0
        for g in groups.values():
            if not g.bodies or g.price is None:
                continue
            requests = [g.prompts[k] for k in g.bodies]
            # As pricing.prompt_counter counts for the dry run: a chat message adds its wrapping.
            count, _ = counter(g.backend.model, CHAT_OVERHEAD_TOKENS if g.backend.chat else 0)
            tokens = sum(count(r.prompt) for r in requests)
            total += g.price.batch().cost(tokens, sum(g.backend.output_budget(r) for r in requests))
        if total > self.max_cost:
            n = sum(len(g.bodies) for g in groups.values())
            raise HarnessError(
                f"--batch: the {n} requests to submit could cost up to ${total:.4f} at the batch price, over "
                f"--max-cost ${self.max_cost:g}; nothing submitted"
            )
