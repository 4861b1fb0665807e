"""Calling a backend for a run: dispatch options from the RunConfig, a progress bar, price and usage."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Sequence
from typing import Any

from tqdm import tqdm

from harness.calling.backends.base import Backend
from harness.calling.cache import ResponseCache
from harness.calling.dispatch import DispatchOptions, DispatchStats, RetryPolicy, complete_all
from harness.calling.pricing import Price, price_for
from harness.config.settings import RunConfig
from harness.prompting.tokens import CHAT_OVERHEAD_TOKENS, counter
from harness.scoring.parsing import parse_score
from harness.types import Completion, HarnessError, Request


def price_of(config: RunConfig, backend: Backend | None) -> Price | None:
    """The model's price for API backends (None when unknown); --max-cost needs one, checked before any work."""
    if backend is not None and not getattr(backend, "remote", False):
        return None
    price = price_for(config.model, config.api.prices)
    if config.api.max_cost is not None and price is None and not config.dry_run:
        raise HarnessError(
            f"--max-cost needs a price for {config.model!r}: none in the package table; pass --prices FILE"
        )
    return price


def reply_fields(c: Completion | None) -> dict[str, Any]:
    """What samples.jsonl keeps of a reply besides its text: finish reason, usage, served model, refusal, cut."""
    if c is None:
        return {}
    return {
        "finish_reason": c.finish_reason,
        "usage": dataclasses.asdict(c.usage) if c.error is None else None,
        "served_model": c.served_model,
        "refusal": c.refusal,
        "truncated": c.truncated,
    }


def usage(
    completions: dict[str, Completion], price: Price | None, stats: DispatchStats | None = None
) -> dict[str, Any]:
    """Tokens of every answer the results use (cached ones included) and what they cost: the batch price for
    answers a batch paid for (`stats.paid_by_batch`), the list price for the rest."""
    by_batch = stats.paid_by_batch if stats is not None else set()
    parts = {"batch": [0, 0, 0], "one_by_one": [0, 0, 0]}  # answers, input tokens, output tokens
    for rid, c in completions.items():
        part = parts["batch" if rid in by_batch else "one_by_one"]
        part[0] += c.error is None
        part[1] += c.usage.input_tokens
        part[2] += c.usage.output_tokens
    tokens_in = parts["batch"][1] + parts["one_by_one"][1]
    tokens_out = parts["batch"][2] + parts["one_by_one"][2]
    cost = None
    if price is not None:
        cost = round(price.cost(*parts["one_by_one"][1:]) + price.batch().cost(*parts["batch"][1:]), 6)
    record = {
        "input_tokens": tokens_in,
        "output_tokens": tokens_out,
        "cost_usd": cost,
        "price": dataclasses.asdict(price) if price else "unknown: no entry in the price table (--prices FILE)",
    }
    if by_batch:  # which price each answer was paid at (--batch: the provider's batch endpoint)
        record["paid"] = {"batch": parts["batch"][0], "one_by_one": parts["one_by_one"][0]}
        record["list_cost_usd"] = round(price.cost(tokens_in, tokens_out), 6) if price else None
    return record


def prompt_counter(config: RunConfig) -> tuple[Callable[[str], int], str]:
    """(prompt tokens of one request, how counted): the one count behind --dry-run and --max-cost. API
    requests in chat form add the message's wrapping."""
    from harness.calling.backends import backend_name, chat_mode

    try:
        api = backend_name(config) in ("openai", "anthropic")
    except HarnessError:
        api = False
    return counter(config.model, CHAT_OVERHEAD_TOKENS if api and chat_mode(config) else 0)


def prompt_tokens(config: RunConfig, texts: Sequence[str]) -> tuple[int, str]:
    """(total prompt tokens, how counted), as `prompt_counter` counts each request."""
    count, method = prompt_counter(config)
    return sum(count(t) for t in texts), method


def output_budget(config: RunConfig, request: Request) -> int:
    """The most output tokens a request can be billed for (reasoning models bill their reasoning as output)."""
    from harness.calling.backends import backend_name
    from harness.calling.backends.openai import is_reasoning_model

    try:
        name = backend_name(config)
    except HarnessError:
        return request.max_tokens
    reasoning = config.api.reasoning if config.api.reasoning is not None else is_reasoning_model(config.model)
    return config.api.reasoning_tokens if name == "openai" and reasoning else request.max_tokens


def dispatch_options(config: RunConfig, backend: Backend, price: Price | None) -> DispatchOptions:
    """Concurrency, retries, cache and spending limit as the run's options say."""
    api = config.api
    cacheable = getattr(backend, "cacheable", True)  # offline baselines answer instantly: nothing to keep
    cache = None if api.no_cache or not cacheable else ResponseCache(api.cache or config.results_dir / "cache.sqlite")
    return DispatchOptions(
        concurrency=api.concurrency,
        retry=RetryPolicy(max_retries=api.max_retries, timeout=api.timeout),
        cache=cache,
        refresh=api.refresh,
        max_cost=api.max_cost,
        price=price,
        count_prompt=prompt_counter(config)[0] if api.max_cost is not None else None,
    )


def _batchable(backend: Backend) -> bool:
    """--batch covers the chat backends with a batch endpoint (openai, anthropic); the others (local models,
    offline baselines, embeddings) run as usual, so a sweep may mix them."""
    from harness.calling.batch.flow import provider_for

    if getattr(backend, "remote", False) and provider_for(backend) is not None:
        return True
    print(f"note: --batch covers the openai and anthropic backends; {backend.name} runs as usual", file=sys.stderr)
    return False


def call(
    backend: Backend,
    requests: tuple[Request, ...],
    config: RunConfig,
    price: Price | None,
    stats: DispatchStats,
    desc: str | None = None,
    scores: bool = True,
) -> dict[str, Completion]:
    """Send requests through dispatch with the run's cache, limits and a progress bar; one Completion per id.

    `scores=False` for answers and embeddings, whose texts are not scores: the bar counts no invalid ones.
    """
    counts = {"invalid": 0, "errors": 0} if scores else {"errors": 0}
    spent = 0.0
    options = dispatch_options(config, backend, price)
    batch = config.api.batch is not None and _batchable(backend)
    # delay=2: quick runs print nothing; longer ones get rate, ETA, invalid, errors and cost so far.
    bar = tqdm(
        total=len(requests),
        desc=desc or backend.model,
        unit="q",
        file=sys.stderr,
        delay=2,
        disable=not config.progress or batch,
    )
    with bar:

        def on_done(c: Completion) -> None:
            nonlocal spent
            if c.error is not None:
                counts["errors"] += 1
            elif scores and parse_score(c.text) is None:
                counts["invalid"] += 1
            if price is not None and not c.cached:
                spent += price.cost_of(c.usage)
            bar.update(1)
            bar.set_postfix(counts | ({"cost": f"${spent:.4f}"} if price is not None else {}), refresh=False)

        try:
            if batch:  # --batch: harness/batch, which prints its own progress
                from harness.calling.batch.run import batch_call

                done = batch_call(backend, requests, config, price, stats)
            else:
                done = complete_all(backend, requests, on_done, options, stats)
                if options.cache is not None and getattr(backend, "remote", False):
                    from harness.calling.batch.run import answered_by_batch

                    stats.paid_by_batch = answered_by_batch(options.cache.path, backend, requests, done)
        finally:
            if options.cache is not None:
                options.cache.close()
                stats.cache_deferred, stats.cache_unsaved = options.cache.deferred, options.cache.unsaved
    if stats.cache_unsaved:
        print(
            f"warning: the cache file {options.cache.path if options.cache else ''} stayed locked by another "
            f"process: {stats.cache_unsaved} answers are in this run's results but not in the cache",
            file=sys.stderr,
        )
    if requests and all(c.error is not None for c in done.values()):
        # Nothing came back (an unreachable server, a wrong --base-url, --max-cost too low): one line and no
        # run folder beats a folder of errors. Nothing is lost: there was nothing to keep.
        first = next(iter(done.values())).error
        raise HarnessError(f"all {len(requests)} requests to {backend.name} model {backend.model!r} failed: {first}")
    return done
