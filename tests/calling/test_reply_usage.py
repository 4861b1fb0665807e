"""A reply's `usage` passes one door (issue 41): a negative, missing, fractional, textual or 400-digit token count is
no count. It must not turn --max-cost off (a negative count used to give money back, a missing one cost nothing),
nor leave the answer uncached (a 400-digit integer does not fit SQLite's). Real runs through the OpenAI and
Anthropic SDKs' wire format against tests/fake_server.py on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.calling.backends.base import MAX_TOKENS_REPORTED, reply_usage, token_count
from harness.calling.budget import Budget
from harness.calling.pricing import Price
from harness.cli.main import main
from harness.types import Request, Usage
from tests.fake_server import FakeServer


@pytest.mark.parametrize(
    ("value", "want"),
    [(0, 0), (17, 17), (MAX_TOKENS_REPORTED, MAX_TOKENS_REPORTED), (MAX_TOKENS_REPORTED + 1, None), (-1, None),
     (10**400, None), (True, None), (3.0, None), ("12", None), (None, None), ([5], None)],
)  # fmt: skip
def test_a_token_count_is_an_integer_of_a_sane_size(value: Any, want: int | None) -> None:
    assert token_count(value) == want


@pytest.mark.parametrize(
    ("usage", "want"),
    [
        ({"i": 10, "o": 5}, Usage(10, 5, 2)),
        ({"i": 10, "o": 1}, Usage(10, 1, 1)),  # reasoning is part of the output, never more
        ({"i": 10}, Usage(10, 0, 0, reported=False)),
        ({"o": 5}, Usage(0, 5, 2, reported=False)),
        ({"i": -3, "o": 5}, Usage(0, 5, 2, reported=False)),
        ({"i": 10**400, "o": 5}, Usage(0, 5, 2, reported=False)),
        ({"i": "10", "o": "5"}, Usage(0, 0, 0, reported=False)),
        (None, Usage(0, 0, 0, reported=False)),
        ([1, 2], Usage(0, 0, 0, reported=False)),
    ],
)
def test_a_reply_s_usage_is_reported_only_when_both_counts_are_counts(usage: Any, want: Usage) -> None:
    assert reply_usage(usage, "i", "o", 2) == want


def test_an_unreported_usage_is_charged_its_reservation() -> None:
    budget = Budget(1.0, Price("t", 1e6 * 0.01, 1e6 * 0.02, "test"), lambda text: 10)  # $0.01 an input token, $0.02 out
    reserved = budget.worst_case(Request("r", "p", max_tokens=5), 5)
    assert reserved == pytest.approx(0.2)
    assert budget.reserve(reserved)
    budget.settle(reserved, Usage(3, 1))
    assert budget.spent == pytest.approx(0.05) and budget.reserved == pytest.approx(0.0)
    assert budget.reserve(reserved)
    budget.settle(reserved, Usage(0, 0, reported=False))
    assert budget.spent == pytest.approx(0.25)
    assert budget.reserve(reserved)
    budget.settle(reserved, None)  # no answer: nothing spent
    assert budget.spent == pytest.approx(0.25) and budget.reserved == pytest.approx(0.0)


N = 12
HOSTILE: dict[str, Any] = {
    "negative": {"prompt_tokens": -(10**6), "completion_tokens": 1},
    "missing": None,
    "text": {"prompt_tokens": "many", "completion_tokens": "few"},
    "400 digits": {"prompt_tokens": 10**399, "completion_tokens": 1},
    "fractions": {"prompt_tokens": 10.5, "completion_tokens": 1.5},
}


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_a_hostile_usage_keeps_max_cost_on_and_every_answer_cached(tmp_path: Path, kind: str) -> None:
    def hostile(endpoint: str, request: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
        if HOSTILE[kind] is None:
            reply.pop("usage", None)
        else:
            reply["usage"] = HOSTILE[kind]
        return reply

    # gpt-4o's price: 12 requests' worst cases are about $0.003; a limit of a third of that must stop the run.
    args = ["--model", "gpt-4o", "--base-url", "", "--dataset", "stsb", "--limit", str(N), "--no-progress"]
    args += ["--results-dir", str(tmp_path), "--cache", str(tmp_path / "cache.sqlite"), "--concurrency", "1"]
    with FakeServer(extras=hostile) as server:
        args[3] = server.openai_url
        assert main([*args, "--run-id", "dry", "--dry-run"]) == 0
        limit = json.loads((tmp_path / "dry" / "metrics.json").read_text())["max_cost_usd"] / 3
        assert main([*args, "--run-id", "capped", "--max-cost", f"{limit:.8f}"]) == 3
        capped = len(server.answered)
        assert main([*args, "--run-id", "all"]) == 0
        paid = len(server.answered)
        assert main([*args, "--run-id", "again"]) == 0
        rebought = len(server.answered) - paid
    metrics = json.loads((tmp_path / "capped" / "metrics.json").read_text())
    assert 0 < capped < N and metrics["dispatch"]["not_sent_max_cost"] == N - capped
    assert metrics["dispatch"]["usage_unreported"] == capped
    assert rebought == 0  # every answer was cached, whatever its usage said
    assert json.loads((tmp_path / "again" / "metrics.json").read_text())["cache"]["hits"] == N
