"""harness/calling/attempts.py: one request's attempts (retries, the malformed-reply bound, --timeout, the wait for a
server that never answered), driven by a backend that follows a script of outcomes, one per attempt."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import pytest

from harness.calling.attempts import MALFORMED_TRIES, POLL_SECONDS, Attempts, Reachability, prompt_tokens
from harness.calling.backends.base import (
    MalformedReply,
    PermanentError,
    RemoteBackend,
    RetryableError,
    Unreachable,
)
from harness.calling.limiter import Limiter
from harness.calling.options import DispatchOptions, DispatchStats, RetryPolicy
from harness.types import Completion, Request, Usage

URL = "http://127.0.0.1:9/v1"
SLOW = 2.2  # seconds: past the progress bar's delay (harness/calling/progress.py)


class Scripted(RemoteBackend):
    """Each attempt takes the next outcome: an exception is raised, "hang" never answers, a text is the answer
    (ending in "?": with no usage reported)."""

    name, model, chat, endpoint = "scripted", "m", True, "/v1/x"

    def __init__(self, outcomes: Sequence[BaseException | str]) -> None:
        self.outcomes = list(outcomes)
        self.sent = 0

    def describe(self) -> dict[str, object]:
        return {}

    def body(self, request: Request) -> dict[str, Any]:
        return {}

    async def send(self, request: Request) -> Completion:
        outcome = self.outcomes[self.sent]
        self.sent += 1
        if isinstance(outcome, BaseException):
            raise outcome
        if outcome == "hang":
            await asyncio.sleep(60)
        if outcome.startswith("slow "):  # "slow 4": answers 4 after SLOW seconds
            await asyncio.sleep(SLOW)
            outcome = outcome.removeprefix("slow ")
        unreported = outcome.endswith("?")  # "4?": an answer whose reply said nothing usable of its tokens
        return Completion(request.id, outcome.rstrip("?"), usage=Usage(reported=not unreported))

    def output_budget(self, request: Request) -> int:
        return 20

    async def aclose(self) -> None:
        pass


def attempt(
    outcomes: Sequence[BaseException | str],
    retries: int = 5,
    timeout: float = 5.0,
    stopping: bool = False,
    wait_for_server: float = 30.0,
    limiter: Limiter | None = None,
    reach: Reachability | None = None,
    prompt: str = "a prompt",
) -> tuple[Completion, Scripted, DispatchStats]:
    backend, stats = Scripted(outcomes), DispatchStats()
    policy = RetryPolicy(max_retries=retries, timeout=timeout, backoff_initial=0.0, wait_for_server=wait_for_server)
    options = DispatchOptions(retry=policy)

    async def go() -> Completion:
        run_reach, request = reach or Reachability(policy.wait_for_server), Request("q1", prompt)
        run_limiter = limiter or Limiter(4)
        return await Attempts(backend, request, options, stats, run_limiter, lambda: stopping, run_reach).run()

    return asyncio.run(go()), backend, stats


def test_an_answer_at_the_first_attempt_is_returned_with_no_retry() -> None:
    done, backend, stats = attempt(["4"])
    assert (done.text, done.error, backend.sent, stats.attempts, stats.retries) == ("4", None, 1, 1, 0)


def test_retryable_failures_are_retried_up_to_max_retries_then_an_error_naming_the_tries() -> None:
    done, backend, stats = attempt([RetryableError("503 busy")] * 3 + ["4"], retries=3)
    assert (done.text, backend.sent, stats.retries) == ("4", 4, 3)
    done, backend, stats = attempt([RetryableError("503 busy")] * 4, retries=2)
    assert (done.text, done.error, backend.sent, stats.retries) == (None, "gave up after 3 tries: 503 busy", 3, 2)
    done, backend, _ = attempt([RetryableError("503 busy")], retries=0)
    assert (done.error, backend.sent) == ("gave up after 1 try: 503 busy", 1)


def test_unreadable_replies_are_tried_malformed_tries_times_whatever_the_retries_left() -> None:
    assert MALFORMED_TRIES == 3
    done, backend, stats = attempt([MalformedReply("cut JSON")] * 5, retries=10)
    assert (done.error, backend.sent, stats.malformed) == ("gave up after 3 tries: cut JSON", 3, 3)
    done, backend, _ = attempt([MalformedReply("cut JSON")] * 2 + ["4"], retries=10)
    assert (done.text, backend.sent) == ("4", 3)


def test_a_stopping_run_does_not_retry() -> None:
    done, backend, stats = attempt([RetryableError("503 busy"), "4"], stopping=True)
    assert (done.error, backend.sent, stats.retries) == ("not retried: the run stopped: 503 busy", 1, 0)


def test_an_attempt_past_timeout_is_a_retryable_failure_naming_the_timeout() -> None:
    done, backend, _ = attempt(["hang", "4"], timeout=0.05)
    assert (done.text, backend.sent) == ("4", 2)
    done, _, _ = attempt(["hang"], retries=0, timeout=0.05)
    assert done.error == "gave up after 1 try: no answer within 0.05s (--timeout)"


def test_a_permanent_error_passes_through_unretried() -> None:
    with pytest.raises(PermanentError, match="401"):
        attempt([PermanentError("401 bad key"), "4"])


def test_tries_spent_waiting_for_a_server_that_never_answered_are_not_retries(capsys: pytest.CaptureFixture) -> None:
    """With no retry left, a server still starting (refused twice) is waited for, polled every POLL_SECONDS."""
    assert POLL_SECONDS == 1.0
    start = time.monotonic()
    done, backend, _ = attempt([Unreachable("refused", URL)] * 2 + ["4"], retries=0)
    assert (done.text, backend.sent) == ("4", 3)
    assert time.monotonic() - start >= 2 * POLL_SECONDS
    err = capsys.readouterr().err
    assert err == f"waiting for the server at {URL}: refused; trying every 1s for up to 30s (--wait-for-server)\n"


def test_once_a_server_answered_refusals_are_ordinary_retries() -> None:
    done, backend, _ = attempt([RetryableError("500"), Unreachable("refused", URL), "4"], retries=1)
    assert (done.error, backend.sent) == ("gave up after 2 tries: refused", 2)


def test_a_server_never_reached_within_the_wait_stops_the_run() -> None:
    with pytest.raises(PermanentError, match=r"no server answered at .* within 0s \(refused\)") as e:
        attempt([Unreachable("refused", URL), "4"], wait_for_server=0.0)
    assert e.value.fatal


def test_reachability_says_once_that_it_waits_and_stops_when_the_wait_is_over(capsys: pytest.CaptureFixture) -> None:
    reach, first, second = Reachability(0.2), Unreachable("refused", URL), Unreachable("refused", URL)
    reach.unreachable(first)
    reach.unreachable(second)
    assert (first.retry_after, second.retry_after) == (POLL_SECONDS, POLL_SECONDS)
    assert capsys.readouterr().err.count("waiting for the server") == 1
    time.sleep(0.25)
    with pytest.raises(PermanentError, match="within 0.2s"):
        reach.unreachable(Unreachable("refused", URL))


def test_prompt_tokens_are_the_counters_or_four_bytes_a_token() -> None:
    request = Request("q", "ab é")  # 5 bytes in UTF-8
    assert prompt_tokens(DispatchOptions(), request) == 1.25
    assert prompt_tokens(DispatchOptions(count_prompt=lambda p: len(p) * 3), request) == 12.0


def test_a_waited_for_try_is_no_retry_but_a_failure_after_it_is() -> None:
    done, backend, _ = attempt([Unreachable("refused", URL)] * 2 + [RetryableError("503")], retries=0)
    assert (done.error, backend.sent) == ("gave up after 3 tries: 503", 3)


def test_a_server_that_answered_once_is_not_waited_for_again() -> None:
    reach = Reachability(30.0)
    attempt(["4"], reach=reach)
    assert reach.answered
    done, backend, _ = attempt([Unreachable("refused", URL), "4"], retries=0, reach=reach)
    assert (done.error, backend.sent) == ("gave up after 1 try: refused", 1)


def test_the_limiter_hears_each_outcome() -> None:
    """An answer counts for the window, a timeout cuts it, a server error or a refusal is no news."""
    limiter = Limiter(4, timeout=0.05)
    attempt(["4"], limiter=limiter)
    attempt(["hang"], retries=0, timeout=0.05, limiter=limiter)
    attempt([RetryableError("500")], retries=0, limiter=limiter)
    with pytest.raises(PermanentError):
        attempt([PermanentError("400 bad request")], limiter=limiter)
    assert (limiter.answers, limiter.timed_out, limiter.in_flight) == (1, 1, 0)


@pytest.mark.parametrize(("said", "then"), [(None, 0.0), (5.0, 5.0)])
def test_a_429_naming_no_wait_is_retried_at_the_limiters_pace(said: float | None, then: float) -> None:
    """The pace (which the 429 just cut, limiter.py) spaces the retry, not a blind backoff; a wait the provider
    named stays."""
    refused = RetryableError("429 slow down", retry_after=said, limited=True)
    attempt([refused], retries=0, limiter=Limiter(4, rpm=6000))
    assert refused.retry_after == then


def test_a_prompt_larger_than_the_token_limit_stops_the_run_before_it_is_sent() -> None:
    with pytest.raises(PermanentError, match="--tpm 10 is fewer tokens a minute than this prompt's 25 tokens") as e:
        attempt(["4"], limiter=Limiter(4, tpm=10), prompt="x" * 100)
    assert e.value.fatal
    done, backend, _ = attempt(["4"], limiter=Limiter(4, tpm=10), prompt="x" * 40)  # 10 tokens: it fits
    assert (done.text, backend.sent) == ("4", 1)
