"""Dispatch: cache first, concurrency, retries, timeouts, the spending limit; every request answered once.

The real OpenAI SDK talks to tests/fake_server.py on 127.0.0.1; faults are injected by the server.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest
from tenacity import AsyncRetrying, RetryCallState

from harness.calling.backends.base import LocalBackend, RetryableError
from harness.calling.backends.openai import OpenAIBackend
from harness.calling.cache import ResponseCache
from harness.calling.dispatch import complete_all
from harness.calling.options import DispatchOptions, DispatchStats, RetryPolicy
from harness.calling.pricing import Price
from harness.types import Completion, HarnessError, Request
from tests.fake_server import REFUSAL, FakeServer, always_ok, default_answer, fail_first

FAST = RetryPolicy(max_retries=4, timeout=5.0, backoff_initial=0.01, backoff_max=0.05)
KEY = "sk-test-0123456789"


def requests(n: int, tag: str = "q") -> list[Request]:
    return [Request(str(i), f"{tag} prompt number {i}: how similar? Output:") for i in range(n)]


def backend(server: FakeServer, **kw: object) -> OpenAIBackend:
    return OpenAIBackend("gpt-4o", KEY, [server.openai_url], **({"chat": True} | kw))  # type: ignore[arg-type]


def run(server: FakeServer, reqs: Sequence[Request], **options: object) -> tuple[dict[str, Completion], DispatchStats]:
    stats = DispatchStats()
    seen: list[str] = []
    opts = DispatchOptions(**({"retry": FAST} | options))  # type: ignore[arg-type]
    done = complete_all(backend(server), reqs, lambda c: seen.append(c.request_id), opts, stats)
    assert sorted(seen) == sorted(r.id for r in reqs), "on_done must see every request exactly once"
    assert set(done) == {r.id for r in reqs}
    return done, stats


def test_429_storm_loses_nothing_and_each_prompt_is_answered_once() -> None:
    reqs = requests(30)
    with FakeServer(plan=fail_first(2, "429")) as server:
        done, stats = run(server, reqs, concurrency=8)
    assert all(done[r.id].error is None and done[r.id].text == default_answer(r.prompt) for r in reqs)
    assert Counter(server.answered) == Counter({r.prompt: 1 for r in reqs})
    assert stats.retries == 60 and stats.attempts == 90


@pytest.mark.parametrize("fault", ["500", "529"])
def test_server_errors_are_retried(fault: str) -> None:
    reqs = requests(10)
    with FakeServer(plan=fail_first(1, fault)) as server:
        done, stats = run(server, reqs)
    assert all(c.error is None for c in done.values())
    assert stats.retries == 10


def test_hung_request_times_out_and_is_retried() -> None:
    reqs = requests(3)
    policy = RetryPolicy(max_retries=2, timeout=0.3, backoff_initial=0.01, backoff_max=0.02)
    with FakeServer(plan=fail_first(1, "hang")) as server:
        done, stats = run(server, reqs, retry=policy)
    assert all(c.error is None for c in done.values())
    assert stats.retries == 3


def test_exhausted_retries_are_errors_not_invalid_outputs_and_are_not_cached(tmp_path: Path) -> None:
    reqs = requests(6)
    cache = ResponseCache(tmp_path / "c.sqlite")
    flaky = {reqs[1].prompt, reqs[4].prompt}
    with FakeServer(plan=lambda p, a: "500" if p in flaky else "ok") as server:
        done, stats = run(server, reqs, cache=cache)
        assert {i for i, c in done.items() if c.error} == {"1", "4"}
        assert all(c.text is None and "gave up after 5 tries" in (c.error or "") for c in (done["1"], done["4"]))
        assert stats.errors == 2 and len(cache) == 4
        # The rerun sends exactly the two that failed.
        server.plan = lambda p, a: "ok"
        before = len(server.calls)
        done, stats = run(server, reqs, cache=cache)
        assert sorted(server.received()[before:]) == sorted(flaky)
    assert all(c.error is None for c in done.values()) and stats.cache_hits == 4


def test_a_request_that_may_not_be_retried_says_it_gave_up_after_one_try() -> None:
    with FakeServer(plan=lambda p, a: "500") as server:
        done, _ = run(server, requests(1), retry=RetryPolicy(max_retries=0, timeout=5.0))
    assert (done["0"].error or "").startswith("gave up after 1 try: ")


def test_unreadable_replies_are_retried_then_that_requests_error_and_empty_or_refused_are_answers() -> None:
    reqs = requests(12)
    kinds = ["malformed", "utf8", "null", "empty", "refusal", "ok"] * 2
    actions = {r.prompt: a for r, a in zip(reqs, kinds, strict=True)}
    # The unreadable replies come first, four at a time: they must not stop the run or lose the others.
    with FakeServer(plan=lambda p, a: actions[p]) as server:
        done, stats = run(server, reqs, concurrency=4)
    by_kind = {k: [done[r.id] for r in reqs if actions[r.prompt] == k] for k in set(kinds)}
    for kind in ("malformed", "utf8", "null"):
        assert all(c.text is None and "gave up after 3 tries" in (c.error or "") for c in by_kind[kind]), kind
        assert all(not c.deterministic_error for c in by_kind[kind])
    assert Counter(server.received())[reqs[0].prompt] == 3  # MALFORMED_TRIES, not max_retries + 1
    assert all(c.text == "" and c.refusal is None and c.error is None for c in by_kind["empty"])
    assert all(c.text == "" and c.refusal == REFUSAL and c.error is None for c in by_kind["refusal"])
    assert all(c.text == default_answer(r.prompt) for r in reqs for c in [done[r.id]] if actions[r.prompt] == "ok")
    assert stats.errors == 6 and stats.malformed == 18


def test_unreadable_replies_are_never_cached_and_the_rerun_asks_again(tmp_path: Path) -> None:
    reqs = requests(4)
    cache = ResponseCache(tmp_path / "c.sqlite")
    with FakeServer(plan=lambda p, a: "null" if p == reqs[1].prompt else "ok") as server:
        done, _ = run(server, reqs, cache=cache)
        assert done["1"].error and len(cache) == 3
        server.plan = always_ok
        done, stats = run(server, reqs, cache=cache)
    assert done["1"].text == default_answer(reqs[1].prompt) and stats.cache_hits == 3


def test_bad_key_stops_the_run_with_one_line_without_the_key() -> None:
    with FakeServer(api_key="the-right-key") as server, pytest.raises(HarnessError) as err:
        run(server, requests(20), concurrency=4)
    message = str(err.value)
    assert "401" in message and "Incorrect API key" in message
    assert KEY not in message and "\n" not in message


@pytest.mark.parametrize("concurrency", [1, 4])
def test_a_400_naming_the_request_shape_stops_the_run_whatever_comes_first(concurrency: int) -> None:
    reqs = requests(12)
    shape = {reqs[5].prompt}  # neither first nor alone in flight at concurrency 4
    server = FakeServer(latency=0.02, plan=lambda p, a: "400-param" if p in shape else "ok")
    with server, pytest.raises(HarnessError, match="HTTP 400: Unsupported parameter"):
        run(server, reqs, concurrency=concurrency)
    assert Counter(server.received())[reqs[5].prompt] == 1  # a 400 is never retried
    assert len(server.calls) < len(reqs)  # nothing new started after it


def test_answers_in_flight_when_the_run_stops_are_still_cached(tmp_path: Path) -> None:
    reqs = requests(8)
    cache = ResponseCache(tmp_path / "c.sqlite")
    # Request 0 fails at once, while 1-3 are still in flight (slow): their answers must be kept.
    server = FakeServer(plan=lambda p, a: "400-param" if p == reqs[0].prompt else "slow")
    with server, pytest.raises(HarnessError, match="answers received so far are cached"):
        run(server, reqs, concurrency=4, cache=cache)
    assert len(server.calls) == 4 and len(server.answered) == 3 and len(cache) == 3


@pytest.mark.parametrize("concurrency", [1, 4])
@pytest.mark.parametrize("fault", ["400", "400-context"])
def test_a_400_about_one_request_is_that_requests_error_whatever_comes_first(fault: str, concurrency: int) -> None:
    reqs = requests(8)
    bad = {reqs[0].prompt, reqs[3].prompt}  # the very first request among them
    with FakeServer(plan=lambda p, a: fault if p in bad else "ok") as server:
        done, stats = run(server, reqs, concurrency=concurrency)
    assert [i for i, c in sorted(done.items()) if c.error] == ["0", "3"]
    assert all(done[i].deterministic_error for i in ("0", "3")) and stats.deterministic_errors == 2
    kind = "context_length_exceeded" if fault == "400-context" else "bad_request"
    assert (done["0"].error or "").startswith(f"{kind}: HTTP 400: ")
    assert Counter(server.received()) == Counter(r.prompt for r in reqs)  # each sent once: never retried


def test_concurrency_limit_is_respected_and_reached() -> None:
    with FakeServer(latency=0.05) as server:
        run(server, requests(24), concurrency=4)
    assert server.max_in_flight == 4


def test_max_cost_stops_before_exceeding_it() -> None:
    price = Price("test", input_per_mtok=1_000.0, output_per_mtok=1_000.0, source="test")
    reqs = requests(20)
    count = lambda text: len(text.split()) + 7  # noqa: E731 - as the server bills: words, plus the chat wrapping
    worst = price.cost(count(reqs[0].prompt), 20)
    limit = worst * 1.5  # the fake server's answers cost far less than the worst case: a few fit, not all
    with FakeServer() as server:
        done, stats = run(server, reqs, concurrency=1, max_cost=limit, price=price, count_prompt=count)
    assert stats.spent_usd is not None and 0 < stats.spent_usd <= limit
    sent = [c for c in done.values() if c.error is None]
    assert len(sent) == len(server.answered) and stats.not_sent_max_cost == len(reqs) - len(sent) > 0
    assert all("--max-cost" in (c.error or "") for c in done.values() if c.error)


class LocalBatch(LocalBackend):
    """A local-GPU-shaped backend: sees all uncached requests in one call."""

    name, model = "local-test", "tiny"

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    async def complete(self, requests: Sequence[Request]) -> AsyncIterator[Completion]:
        self.batches.append([r.id for r in requests])
        for r in reversed(requests):
            yield Completion(r.id, f"{len(r.prompt) % 5}.0")

    def describe(self) -> dict[str, object]:
        return {"dtype": "bf16"}


def test_local_backends_get_one_batch_of_the_uncached_requests(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    local = LocalBatch()
    complete_all(local, requests(5), options=DispatchOptions(cache=cache))
    done = complete_all(local, requests(7), options=DispatchOptions(cache=cache))
    assert local.batches == [["0", "1", "2", "3", "4"], ["5", "6"]]
    assert [done[str(i)].cached for i in range(7)] == [True] * 5 + [False] * 2


def test_retry_after_is_honoured_and_capped() -> None:
    policy = RetryPolicy(backoff_initial=0.01, backoff_max=0.02, retry_after_cap=10.0)

    def wait_after(error: Exception) -> float:
        state = RetryCallState(AsyncRetrying(), None, (), {})
        state.set_exception((type(error), error, None))
        return policy.wait(state)

    assert wait_after(RetryableError("429", retry_after=3.0)) == 3.0
    assert wait_after(RetryableError("429", retry_after=600.0)) == 10.0
    assert wait_after(RetryableError("500")) <= 0.02


def test_refresh_sends_again_and_replaces_the_stored_answer(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    reqs = requests(3)
    with FakeServer() as server:
        run(server, reqs, cache=cache)
        server.answer = lambda prompt: "5.0"
        done, stats = run(server, reqs, cache=cache, refresh=True)
        assert len(server.calls) == 6 and stats.cache_hits == 0 and stats.cache == "refresh"
        done, stats = run(server, reqs, cache=cache)
    assert stats.cache_hits == 3 and {c.text for c in done.values()} == {"5.0"}


def test_without_a_cache_everything_is_sent_every_time() -> None:
    with FakeServer() as server:
        run(server, requests(3))
        _, stats = run(server, requests(3))
    assert len(server.calls) == 6 and stats.cache == "off" and stats.cache_hits == stats.cache_misses == 0
