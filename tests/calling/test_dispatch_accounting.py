"""harness/calling/dispatch.py's accounting: every request counted once, as an answer, an error or a deterministic
error, the first errors kept to show, and the two ways a run ends in one line (a fatal error, every request failed).
A backend that follows a script of outcomes (tests/calling/test_attempts.py), one request at a time."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from harness.calling.backends.base import LocalBackend, PermanentError, RetryableError
from harness.calling.cache import ResponseCache
from harness.calling.dispatch import call, complete_all
from harness.calling.options import DispatchOptions, DispatchStats, RetryPolicy
from harness.calling.pricing import Price
from harness.scoring.parsing import parse_score
from harness.types import Completion, HarnessError, Request
from tests.calling.test_attempts import Scripted

ONE_AT_A_TIME = DispatchOptions(concurrency=1, retry=RetryPolicy(max_retries=0, backoff_initial=0.0))


def requests(n: int) -> list[Request]:
    return [Request(f"q{i}", f"the prompt of item {i}") for i in range(n)]


def test_each_request_is_an_answer_an_error_or_a_deterministic_error_and_the_first_three_are_kept() -> None:
    outcomes: list[BaseException | str] = [
        "4",
        RetryableError("503 a"),
        PermanentError("400 b"),
        RetryableError("503 c"),
    ]
    outcomes += [PermanentError("400 d"), RetryableError("503 e"), RetryableError("503 f"), "2?"]
    stats, seen = DispatchStats(), list[Completion]()
    done = complete_all(Scripted(outcomes), requests(8), seen.append, ONE_AT_A_TIME, stats)
    assert [done[f"q{i}"].text for i in range(8)] == ["4", None, None, None, None, None, None, "2"]
    assert [c.request_id for c in seen] == [f"q{i}" for i in range(8)]  # on_done once each, as they came
    assert (stats.requests, stats.errors, stats.deterministic_errors) == (8, 6, 2)
    assert stats.first_errors == [f"gave up after 1 try: 503 {x}" for x in "ace"]  # the first three retried
    assert stats.first_deterministic_errors == ["400 b", "400 d"]
    assert [done[q].deterministic_error for q in ("q1", "q2")] == [False, True]
    assert stats.usage_unreported == 1  # the last answer, which said nothing of its tokens


def test_a_fatal_error_stops_the_run_in_one_line_naming_the_model() -> None:
    backend = Scripted(["4", PermanentError("401 bad key", fatal=True), "3"])
    with pytest.raises(HarnessError) as e:
        complete_all(backend, requests(3), options=ONE_AT_A_TIME)
    assert str(e.value) == (
        "scripted model 'm': 401 bad key (answers received so far are cached; nothing else was written)"
    )
    assert backend.sent == 2  # no request starts after it


def test_a_run_whose_every_request_failed_is_one_line_with_the_first_error() -> None:
    with pytest.raises(HarnessError) as e:
        call(Scripted([RetryableError("503 busy")] * 2), requests(2), ONE_AT_A_TIME, DispatchStats())
    assert str(e.value) == "all 2 requests to scripted model 'm' failed: gave up after 1 try: 503 busy"


def test_call_parses_each_score_reply_once_and_leaves_errors_unparsed() -> None:
    replies = call(Scripted(["4", "no idea", RetryableError("503")]), requests(3), ONE_AT_A_TIME, DispatchStats(),
                   parse=parse_score)  # fmt: skip
    assert replies.parsed == {"q0": 4.0, "q1": None}
    assert [replies.completions[f"q{i}"].error is None for i in range(3)] == [True, True, False]
    assert call(Scripted(["4"]), requests(1), ONE_AT_A_TIME, DispatchStats()).parsed == {}


def test_no_request_is_no_error() -> None:
    assert call(Scripted([]), [], ONE_AT_A_TIME, DispatchStats()).completions == {}


def test_a_completion_is_cleaned_of_the_prompt_quoted_in_its_error() -> None:
    said = RetryableError("400: input 'the prompt of item 0' is too long")
    done = complete_all(Scripted([said]), requests(1), options=ONE_AT_A_TIME)
    assert done["q0"].error == "gave up after 1 try: 400: input '[prompt text]' is too long"


def test_the_progress_bar_counts_invalid_replies_and_errors(capsys: pytest.CaptureFixture) -> None:
    """The bar (shown past its 2-second delay), named for the model, says how many replies were no score and how many
    requests failed; without --progress there is none."""
    options = replace(ONE_AT_A_TIME, progress=True)
    outcomes: list[BaseException | str] = ["no idea", RetryableError("503"), "3", "slow 4"]
    call(Scripted(outcomes), requests(4), options, DispatchStats(), parse=parse_score)
    err = capsys.readouterr().err
    assert err.endswith("invalid=1, errors=1]\n") and err.splitlines()[-1].startswith("m: 100%")
    call(Scripted([RetryableError("503"), "4", "slow 4"]), requests(3), options, DispatchStats())  # answers: no score
    err = capsys.readouterr().err
    assert err.endswith(", errors=1]\n") and "invalid" not in err
    call(Scripted(outcomes), requests(4), ONE_AT_A_TIME, DispatchStats(), parse=parse_score)
    assert capsys.readouterr().err == ""


def test_a_cached_run_counts_hits_and_misses_and_asks_only_the_misses(tmp_path: Path) -> None:
    options = replace(ONE_AT_A_TIME, cache_path=tmp_path / "cache.db")
    stats = DispatchStats()
    began = time.perf_counter()
    first = call(Scripted(["4", RetryableError("503"), "2?"]), requests(3), options, stats)
    took = time.perf_counter() - began
    assert (stats.cache, stats.cache_hits, stats.cache_misses, stats.usage_unreported) == ("on", 0, 3, 1)
    assert round(stats.seconds, 3) == stats.seconds and 0 <= stats.seconds <= took + 0.001  # to the millisecond
    backend, stats = Scripted(["3"]), DispatchStats()
    again = call(backend, requests(3), options, stats)
    assert (stats.cache_hits, stats.cache_misses, backend.sent, stats.usage_unreported) == (2, 1, 1, 0)
    assert [again.completions[f"q{i}"].text for i in range(3)] == ["4", "3", "2"]
    assert [again.completions[f"q{i}"].cached for i in range(3)] == [True, False, True]
    assert first.completions["q2"].text == "2"


def test_max_cost_stops_sending_what_could_exceed_it_and_charges_what_was_used() -> None:
    """$1 a million tokens each way: a request may cost its prompt's bytes (the count without a tokenizer) and 20
    output tokens; an answer that reported no usage is charged all of that, an error nothing."""
    price = Price("m", 1.0, 1.0, "test")
    worst = price.cost(len(b"the prompt of item 0"), 20)
    options = replace(ONE_AT_A_TIME, max_cost=1.5 * worst, price=price)
    stats = DispatchStats()
    done = complete_all(Scripted(["4", RetryableError("503"), "3?", "2"]), requests(4), options=options, stats=stats)
    assert [done[f"q{i}"].error for i in range(4)] == [
        None,
        "gave up after 1 try: 503",
        None,
        f"not sent: --max-cost ${1.5 * worst:g} would be exceeded",  # "3?" was charged all it could cost
    ]
    assert stats.not_sent_max_cost == 1
    assert stats.spent_usd == 0.0  # by the answers' own counts (0 tokens each)


def test_a_price_without_max_cost_sums_what_was_spent_and_refuses_nothing() -> None:
    stats = DispatchStats()
    options = replace(ONE_AT_A_TIME, price=Price("m", 1.0, 1.0, "test"))
    done = complete_all(Scripted(["4", "3?", "2"]), requests(3), options=options, stats=stats)
    assert [c.text for c in done.values()] == ["4", "3", "2"]
    assert (stats.spent_usd, stats.not_sent_max_cost) == (0.0, 0)  # the answers' own counts: 0 tokens each


def test_an_unexpected_exception_is_that_requests_error_and_the_rest_are_answered() -> None:
    stats = DispatchStats()
    done = complete_all(Scripted([ValueError("boom"), "4"]), requests(2), options=ONE_AT_A_TIME, stats=stats)
    assert done == {"q0": Completion("q0", None, error="unexpected ValueError: boom"), "q1": Completion("q1", "4")}
    assert (stats.errors, stats.deterministic_errors) == (1, 0)  # a rerun asks it again


class Partial(LocalBackend):
    """A local backend that answers only its first request."""

    name, model = "partial", "m"

    async def complete(self, requests: Sequence[Request]) -> AsyncIterator[Completion]:
        yield Completion(requests[0].id, "4")

    def describe(self) -> dict[str, object]:
        return {}


def test_a_request_a_backend_left_unanswered_is_an_error_naming_the_backend() -> None:
    done = complete_all(Partial(), requests(2))
    unanswered = Completion("q1", None, error="backend partial returned no completion")
    assert done == {"q0": Completion("q0", "4"), "q1": unanswered}


class Staggered(Scripted):
    """Answers "4" to item i after i tenths of a second."""

    async def send(self, request: Request) -> Completion:
        self.sent += 1
        await asyncio.sleep(0.1 * int(request.id.removeprefix("q")))
        return Completion(request.id, "4")


def test_a_failure_while_answers_are_in_flight_keeps_every_one_of_them(tmp_path: Path) -> None:
    """What stops a run (here its progress callback, failing at the first answer) lets the requests already sent
    finish and their answers be stored: they are paid for, and the rerun asks nothing again."""

    def fails_first(c: Completion) -> None:
        if c.request_id == "q0":
            raise RuntimeError("the callback broke")

    cache = ResponseCache(tmp_path / "c.db")
    try:
        with pytest.raises(RuntimeError, match="the callback broke"):
            complete_all(Staggered([]), requests(4), fails_first, DispatchOptions(concurrency=4, cache=cache))
        again = Staggered([])
        done = complete_all(again, requests(4), options=DispatchOptions(concurrency=4, cache=cache))
    finally:
        cache.close()
    assert again.sent == 0 and [c.cached for c in done.values()] == [True] * 4


def test_a_fatal_error_under_max_cost_stops_the_run_in_one_line_and_charges_nothing_for_it() -> None:
    price = Price("m", 1.0, 1.0, "test")
    options = replace(ONE_AT_A_TIME, max_cost=1.0, price=price)
    stats, backend = DispatchStats(), Scripted(["4", PermanentError("401 bad key", fatal=True)])
    with pytest.raises(HarnessError, match=r"^scripted model 'm': 401 bad key \(answers received so far are cached"):
        complete_all(backend, requests(3), options=options, stats=stats)
    assert stats.spent_usd == 0.0
