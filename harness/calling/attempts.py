"""One API request's attempts, for dispatch (harness/calling/dispatch.py): each through the limiter (a slot, the
pace), under --timeout, retried on what is worth retrying by our one retry policy (tenacity; options.py
`RetryPolicy`), with what each reply said of the provider's rate limit, and each timeout (congestion, as a 429 is),
reported back to the limiter.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from typing import NoReturn

from tenacity import AsyncRetrying, RetryCallState, RetryError, retry_if_exception_type

from harness.calling.backends.base import MalformedReply, PermanentError, RemoteBackend, RetryableError, Unreachable
from harness.calling.limiter import Limiter
from harness.calling.limits import unfit
from harness.calling.options import DispatchOptions, DispatchStats
from harness.types import Completion, Request

MALFORMED_TRIES = 3  # a reply we cannot read is retried, but a server that only sends those is given up on
POLL_SECONDS = 1.0  # how often a server that never answered is tried again while we wait for it


class Reachability:
    """Whether any request of this run reached its server. Until one has, a server that cannot be reached (refused,
    unreachable, no connection in time: `Unreachable`) is polled every POLL_SECONDS for `wait` seconds
    (--wait-for-server), saying so on stderr once, and then stops the run: a dead server or a wrong --base-url
    is reported in seconds, not after every request's retries. Once one answered, such failures are ordinary
    retries (a server restarting mid-run)."""

    def __init__(self, wait: float) -> None:
        self.wait = wait
        self.answered = False
        self.since: float | None = None

    def unreachable(self, e: Unreachable) -> None:
        """One failed try to reach a server that never answered: wait and poll, or (past `wait`) stop the run."""
        now = time.monotonic()
        if self.since is None:
            self.since = now
        if now - self.since >= self.wait:
            raise PermanentError(
                f"no server answered at {e.url} within {self.wait:g}s ({e}): is it running, and is {e.named_by} "
                "right? (--wait-for-server SECONDS waits longer for a server that is still starting)",
                fatal=True,
            ) from None
        if self.since == now:
            print(
                f"waiting for the server at {e.url}: {e}; trying every {POLL_SECONDS:g}s for up to {self.wait:g}s "
                "(--wait-for-server)",
                file=sys.stderr,  # line-buffered (Python 3.9+): the line is out at once
            )
        e.retry_after = POLL_SECONDS


class Attempts:
    """The attempts at one request. `run` returns an answer, or an error Completion once retries are spent;
    PermanentError passes through (dispatch decides whether it stops the run)."""

    def __init__(
        self,
        backend: RemoteBackend,
        request: Request,
        options: DispatchOptions,
        stats: DispatchStats,
        limiter: Limiter,
        stopping: Callable[[], bool],  # the run is stopping (a fatal error): no more retries
        reach: Reachability,
    ) -> None:
        self.backend, self.request, self.options, self.stats = backend, request, options, stats
        self.limiter, self.stopping, self.reach = limiter, stopping, reach
        self.tries = self.malformed = self.unreached = 0  # unreached: tries spent waiting for a server (not retries)

    async def run(self) -> Completion:
        try:  # most requests are answered at once: no retry machinery for them
            return await self.one()
        except RetryableError as e:
            first = e
        policy, stats = self.options.retry, self.stats

        def count_retry(state: RetryCallState) -> None:
            stats.retries += 1

        def stop(state: RetryCallState) -> bool:
            # No retry once the run is stopping; at most MALFORMED_TRIES unreadable replies per request.
            retries = self.tries - self.unreached
            return self.stopping() or self.malformed >= MALFORMED_TRIES or retries > policy.max_retries

        def replay() -> NoReturn:
            raise first

        retrying = AsyncRetrying(
            stop=stop, wait=policy.wait, retry=retry_if_exception_type(RetryableError), before_sleep=count_retry
        )
        replayed = False
        try:
            async for attempt in retrying:
                with attempt:  # tenacity's first "attempt" replays the first failure, so that its wait applies
                    if not replayed:
                        replayed = True
                        replay()
                    return await self.one()
        except RetryError as e:
            last = e.last_attempt.exception()
            tries = "1 try" if self.tries == 1 else f"{self.tries} tries"
            why = "not retried: the run stopped" if self.stopping() else f"gave up after {tries}"
            return Completion(self.request.id, None, error=f"{why}: {last}")
        raise AssertionError("unreachable: tenacity returns or raises")

    async def one(self) -> Completion:
        """One attempt through the limiter: a slot, the send under --timeout, and what the reply said of the
        provider's rate limit."""
        request, limiter = self.request, self.limiter
        self.tries += 1
        self.stats.attempts += 1
        cost = prompt_tokens(self.options, request) if limiter.tokens is not None else 0.0
        if limiter.tokens is not None and (why := unfit(cost, limiter.tokens.limit, limiter.fixed_tpm)) is not None:
            raise PermanentError(why, fatal=True)  # pacing to it would wait cost/limit minutes a request, forever
        sent = await limiter.acquire(cost)
        load = limiter.out  # ours out as it left, itself included: the latency's context (congestion.py)
        timeout = self.options.retry.timeout
        try:
            async with asyncio.timeout(timeout):
                completion = await self.backend.send(request)
        except TimeoutError:  # congestion, as a 429 is: the window is cut
            limiter.release(sent, ok=False, timed_out=True, load=load)
            raise RetryableError(f"no answer within {timeout:g}s (--timeout)") from None
        except RetryableError as e:
            limiter.release(sent, ok=False, limited=e.limited, retry_after=e.retry_after, limits=e.rate_limit)
            if e.limited and e.retry_after is None and limiter.paced():
                # A 429 that names no wait: the limiter's pace (which the 429 just cut) spaces the retry, not a
                # blind backoff of seconds that leaves the last requests of a run waiting with the limit idle.
                e.retry_after = 0.0
            if isinstance(e, Unreachable) and not self.reach.answered:
                self.unreached += 1
                self.reach.unreachable(e)  # raises PermanentError once the wait is over
            else:
                self.reach.answered = True  # a reply (an error status, an unreadable body) or a dropped request
            if isinstance(e, MalformedReply):
                self.malformed += 1
                self.stats.malformed += 1
            raise
        except BaseException:
            limiter.release(sent, ok=False)
            raise
        limiter.release(sent, ok=True, limits=completion.rate_limit, load=load)
        self.reach.answered = True
        return completion


def prompt_tokens(options: DispatchOptions, request: Request) -> float:
    """Prompt tokens as --max-cost counts them, else about four bytes a token: what token pacing books."""
    count = options.count_prompt
    return float(count(request.prompt)) if count is not None else len(request.prompt.encode()) / 4.0
