"""dispatch.call, a run's calling step: options built once, the cache opened for what deserves one, each
output parsed once, --batch through the provider's batch endpoint, one line when every request failed. The real
OpenAI SDK against tests/fake_server.py and tests/fake_batch_server.py."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from harness.calling.backends.base import LocalBackend
from harness.calling.backends.offline import OverlapScorer
from harness.calling.backends.openai import OpenAIBackend
from harness.calling.dispatch import call
from harness.calling.options import DispatchOptions, DispatchStats, dispatch_options
from harness.config.sections import BatchOptions
from harness.config.settings import ApiOptions, RunConfig
from harness.scoring.parsing import parse_score
from harness.types import Completion, HarnessError, Request
from tests.fake_batch_server import FakeBatchServer
from tests.fake_server import FakeServer

KEY = "sk-test-0123456789"
REQUESTS = [Request(str(i), f"Sentence 1: a{i}. Sentence 2: b{i}. Output:") for i in range(6)]


class Counting:
    """parse_score, counting how often it is asked."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, text: str | None) -> float | None:
        self.calls += 1
        return parse_score(text)


def test_options_come_from_the_run_settings_once(tmp_path: Path) -> None:
    config = RunConfig(model="gpt-4o", results_dir=tmp_path, api=ApiOptions(concurrency=3, max_retries=2, timeout=9))
    options = dispatch_options(config, None)
    assert (options.concurrency, options.retry.max_retries, options.retry.timeout) == (3, 2, 9)
    assert options.cache_path == tmp_path / "cache.sqlite" and options.cache is None  # call opens it
    assert dispatch_options(RunConfig(model="m", api=ApiOptions(no_cache=True)), None).cache_path is None


def test_answers_are_cached_and_each_parsed_once(tmp_path: Path) -> None:
    options = DispatchOptions(cache_path=tmp_path / "cache.sqlite")
    with FakeServer() as server:
        backend = OpenAIBackend("gpt-4o", KEY, [server.openai_url], chat=True)
        parse = Counting()
        first = call(backend, REQUESTS, options, DispatchStats(), parse=parse)
        assert parse.calls == len(REQUESTS)  # one parse per answer, as it arrived
        assert first.parsed == {rid: parse_score(c.text) for rid, c in first.completions.items()}
        sent = len(server.calls)
        stats = DispatchStats()
        again = call(OpenAIBackend("gpt-4o", KEY, [server.openai_url], chat=True), REQUESTS, options, stats)
        assert len(server.calls) == sent and stats.cache_hits == len(REQUESTS)  # the cache answered
    assert all(c.cached for c in again.completions.values()) and again.parsed == {}  # answers, not scores


def test_batch_sends_through_the_batch_endpoint_and_answers_as_one_by_one(tmp_path: Path) -> None:
    with FakeBatchServer(batch_delay=0.05) as server:
        options = DispatchOptions(cache_path=tmp_path / "cache.sqlite", batch=BatchOptions(poll=0.05))
        stats = DispatchStats()
        batched = call(OpenAIBackend("gpt-4o", KEY, [server.openai_url]), REQUESTS, options, stats)
        assert server.calls == [] and server.submitted == Counter(r.prompt for r in REQUESTS)  # one batch, no POST
        alone = call(OpenAIBackend("gpt-4o", KEY, [server.openai_url]), REQUESTS, DispatchOptions(), DispatchStats())
    texts = {rid: c.text for rid, c in alone.completions.items()}
    assert {rid: c.text for rid, c in batched.completions.items()} == texts and None not in texts.values()
    assert len(server.calls) == len(REQUESTS)  # the one by one run, sent without a cache


def test_a_backend_whose_answers_are_free_gets_no_cache_file(tmp_path: Path) -> None:
    options = DispatchOptions(cache_path=tmp_path / "cache.sqlite")
    stats = DispatchStats()
    replies = call(OverlapScorer(), REQUESTS, options, stats, parse=parse_score)
    assert not (tmp_path / "cache.sqlite").exists() and stats.cache == "off"
    assert set(replies.completions) == {r.id for r in REQUESTS}


class Failing(LocalBackend):
    name, model = "failing", "none"

    async def complete(self, requests: Sequence[Request]) -> AsyncIterator[Completion]:
        for r in requests:
            yield Completion(r.id, None, error="engine fell over")

    def describe(self) -> dict[str, object]:
        return {}


def test_every_request_failing_is_one_line_not_a_run(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match="all 6 requests to failing model 'none' failed: engine fell over"):
        call(Failing(), REQUESTS, DispatchOptions(), DispatchStats())
