"""--max-cost counts prompt tokens as --dry-run does and reserves the output budget, so it stops near its
limit, never past it, and a limit equal to the run's own dry-run estimate sends everything.

The fake server bills the worst case on purpose: the prompt's real tiktoken count plus the chat wrapping,
and every one of the 20 output tokens."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.calling.pricing import price_for
from harness.cli.main import main
from harness.prompting.tokens import CHAT_OVERHEAD_TOKENS, encoding
from tests.fake_server import FakeServer

N = 40


def worst_case_usage(prompt: str, text: str) -> tuple[int, int]:
    return len(encoding("o200k_base").encode(prompt)) + CHAT_OVERHEAD_TOKENS, 20


def argv(results: Path, server: FakeServer, *extra: str) -> list[str]:
    return ["--model", "gpt-4o", "--base-url", server.openai_url, "--dataset", "stsb", "--limit", str(N),
            "--shots", "4", "--instr", "long", "--results-dir", str(results), "--no-progress", *extra]  # fmt: skip


def dry_run_estimate(results: Path, server: FakeServer) -> dict:
    assert main(argv(results, server, "--dry-run", "--run-id", "dry")) == 0
    return json.loads((results / "dry" / "metrics.json").read_text())


def test_a_limit_equal_to_the_dry_run_estimate_sends_everything(tmp_path: Path) -> None:
    with FakeServer(usage=worst_case_usage) as server:
        estimate = dry_run_estimate(tmp_path, server)
        assert estimate["token_count"] == "tiktoken o200k_base, +7 per request for the chat message"
        limit = estimate["max_cost_usd"]
        assert main(argv(tmp_path, server, "--max-cost", str(limit), "--run-id", "r")) == 0
    metrics = json.loads((tmp_path / "r" / "metrics.json").read_text())
    assert len(server.answered) == N and metrics["dispatch"]["not_sent_max_cost"] == 0
    assert metrics["usage"]["input_tokens"] == estimate["prompt_tokens"]  # counted exactly as billed
    assert 0 < metrics["dispatch"]["spent_usd"] <= limit


@pytest.mark.parametrize("share", [0.5, 0.1])
def test_a_lower_limit_stops_near_it_and_never_past_it(tmp_path: Path, share: float) -> None:
    with FakeServer(usage=worst_case_usage) as server:
        estimate = dry_run_estimate(tmp_path, server)
        limit = estimate["max_cost_usd"] * share
        assert main(argv(tmp_path, server, "--max-cost", f"{limit:.8f}", "--run-id", "r", "--concurrency", "1")) == 3
    metrics = json.loads((tmp_path / "r" / "metrics.json").read_text())
    spent, sent = metrics["dispatch"]["spent_usd"], len(server.answered)
    price = price_for("gpt-4o")
    assert price is not None
    biggest = max(price.cost(*worst_case_usage(c.prompt, "")) for c in server.calls)
    assert spent <= limit and spent > limit - biggest  # stops within one request of the limit
    assert sent + metrics["dispatch"]["not_sent_max_cost"] == N and sent >= int(N * share) - 1
