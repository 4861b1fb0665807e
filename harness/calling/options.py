"""What dispatch is told (RetryPolicy, DispatchOptions, built from a RunConfig once) and what it reports
(DispatchStats, the "cache" and "dispatch" records of metrics.json)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tenacity import RetryCallState
from tenacity.wait import wait_random_exponential

from harness.calling.backends.base import RetryableError
from harness.calling.cache import ResponseCache
from harness.calling.limiter import RETRY_AFTER_CAP
from harness.calling.pricing import Price, prompt_counter
from harness.config.sections import ApiOptions
from harness.config.settings import BatchOptions, RunConfig

API = ApiOptions()  # the declared defaults (harness/config/sections.py): a DispatchOptions() dispatches as a run does


@dataclass(frozen=True)
class RetryPolicy:
    """Our one retry policy: exponential backoff with full jitter, or the provider's retry-after (capped)."""

    max_retries: int = API.max_retries  # retries after the first attempt
    timeout: float = API.timeout  # seconds per attempt
    backoff_initial: float = 1.0
    backoff_max: float = 60.0
    retry_after_cap: float = RETRY_AFTER_CAP  # never sleep longer (60 s), whatever the provider says: as the limiter
    wait_for_server: float = API.wait_for_server  # seconds a server that never answered is waited for (Reachability)

    def wait(self, state: RetryCallState) -> float:
        """Seconds before the next attempt."""
        error = state.outcome.exception() if state.outcome is not None else None
        if isinstance(error, RetryableError) and error.retry_after is not None:
            return min(error.retry_after, self.retry_after_cap)
        return float(wait_random_exponential(multiplier=self.backoff_initial, max=self.backoff_max)(state))


@dataclass(frozen=True)
class DispatchOptions:
    """How dispatch calls one backend: built once per calling step from the run's settings (`dispatch_options`)."""

    concurrency: int = (
        API.concurrency
    )  # the most API requests in flight: a ceiling, the limiter finds the rate (limiter.py)
    rpm: float | None = None  # --rpm: pace requests to this many a minute (None: only what the provider reports)
    tpm: float | None = None  # --tpm: pace prompt tokens to this many a minute
    retry: RetryPolicy = RetryPolicy()
    cache: ResponseCache | None = None  # the open cache `complete_all` uses (dispatch.call opens it from cache_path)
    refresh: bool = False  # --refresh: ignore stored answers, store the new ones
    max_cost: float | None = None  # US dollars this invocation may spend (API backends)
    price: Price | None = None
    count_prompt: Callable[[str], int] | None = None  # prompt tokens as --dry-run counts them (for --max-cost)
    cache_path: Path | None = None  # dispatch.call: the cache file it opens for a cacheable backend; None: --no-cache
    progress: bool = False  # dispatch.call: a progress bar on stderr
    batch: BatchOptions | None = None  # dispatch.call: --batch, the provider's batch endpoint (harness/calling/batch)
    # --max-reply-mb (a READING setting): a stored too-large verdict is this run's only under a cap no larger than
    # the one it was read under (harness/calling/backends/reading.py `holds`)
    max_reply_mb: float = ApiOptions.max_reply_mb


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
    # Answers whose reply gave no usable token counts (none, negative, not an integer: backends/base.py reply_usage):
    # their cost is not in spent_usd; --max-cost charged each what it reserved (budget.py).
    usage_unreported: int = 0
    spent_usd: float | None = None  # this invocation's new spending (cached answers are free)
    seconds: float = 0.0
    first_errors: list[str] = field(default_factory=list)  # a few messages, for the report line
    first_deterministic_errors: list[str] = field(default_factory=list)
    cache_deferred: int = 0  # answers that met a locked cache file and were written later
    cache_unsaved: int = 0  # answers the locked cache file never took: in this run's results only
    cache_problem: str | None = None  # why answers were deferred or unsaved (a lock, a refused row), in words
    # What the cache key names the servers by: None, their addresses (or no server); else the model files they said
    # they serve (llama.cpp's /props: harness/calling/backends/served.py)
    cache_served: list[str] | None = None
    limiter: dict[str, Any] | None = None  # the limiter's report (harness/calling/limiter.py); None: no API calls
    batch: dict[str, Any] | None = None  # --batch: batches waited on, requests submitted and answered (harness/batch)
    paid_by_batch: set[str] = field(default_factory=set)  # request ids whose answer was billed at the batch price

    def record(self) -> dict[str, Any]:
        """{"cache": ..., "dispatch": ...} for metrics.json."""
        d = asdict(self)
        d.pop("paid_by_batch")  # ids, not a number: usage (harness/calling/pricing.py) prices them
        if d["batch"] is None:
            d.pop("batch")
        if d["limiter"] is None:
            d.pop("limiter")
        cache = {"mode": d.pop("cache"), "hits": d.pop("cache_hits"), "misses": d.pop("cache_misses")}
        if (served := d.pop("cache_served")) is not None:
            cache["served"] = served
        deferred, unsaved, why = d.pop("cache_deferred"), d.pop("cache_unsaved"), d.pop("cache_problem")
        if deferred or unsaved:
            cache |= {"deferred": deferred, "unsaved": unsaved}
        if unsaved:
            cache["note"] = (
                f"{unsaved} answers could not be written to the cache file ({why}): they are in this run's "
                "results, but a rerun would send them again"
            )
        return {"cache": cache, "dispatch": d}


def cache_path(config: RunConfig) -> Path | None:
    """The response cache file the run reads and writes (--cache, else the results folder's); None: --no-cache."""
    return None if config.api.no_cache else config.api.cache or config.results_dir / "cache.sqlite"


def dispatch_options(config: RunConfig, price: Price | None) -> DispatchOptions:
    """Concurrency, retries, cache, spending limit, progress and --batch as the run's options say."""
    api = config.api
    return DispatchOptions(
        concurrency=api.concurrency,
        rpm=api.rpm,
        tpm=api.tpm,
        retry=RetryPolicy(max_retries=api.max_retries, timeout=api.timeout, wait_for_server=api.wait_for_server),
        refresh=api.refresh,
        max_cost=api.max_cost,
        price=price,
        count_prompt=prompt_counter(config)[0] if api.max_cost is not None or api.tpm is not None else None,
        cache_path=cache_path(config),
        progress=config.progress,
        batch=api.batch,
        max_reply_mb=api.max_reply_mb,
    )
