"""Reasoning models on every API wire format, through run_eval.py, the real openai and anthropic SDKs and
tests/fake_server.py: what is sent (thinking budgets, the chat template's switch) and what a sample keeps (the
answer, the thought, reasoning tokens, `thinking-cut-off` for a reply cut off while thinking)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.reporting.report import write_report
from harness.scoring.parsing import parse_score
from tests.fake_replies import HIDDEN_TOKENS, THOUGHT
from tests.fake_server import FakeServer, default_answer

LIMIT = 4


def run(tmp: Path, server: FakeServer, url: str, run_id: str, *extra: str) -> list[dict]:
    argv = ["--dataset", "stsb", "--limit", str(LIMIT), "--base-url", url, "--results-dir", str(tmp),
            "--run-id", run_id, "--no-progress", *extra]  # fmt: skip
    assert main(argv) == 0
    return [json.loads(line) for line in (tmp / run_id / "samples.jsonl").read_text().splitlines()]


def answered(rows: list[dict], thought: str) -> None:
    """Every sample: the answer parsed, the thought kept apart (its numbers never read)."""
    for r in rows:
        answer = default_answer(r["prompt"])
        assert (r["output"], r["parsed"], r["reason"]) == (answer, parse_score(answer), "number")
        assert r["reasoning"] == thought


def cut_off(rows: list[dict]) -> None:
    for r in rows:
        assert (r["output"], r["parsed"], r["valid"], r["reason"]) == ("", None, False, "thinking-cut-off")
        assert r["prediction"] is not None  # the paper's seeded fallback, as for any invalid answer


@pytest.mark.parametrize("action", ["think", "think-vllm"])
def test_a_servers_reasoning_field_is_the_thought_and_qwen3_gets_its_thinking_switch(
    tmp_path: Path, action: str
) -> None:
    """vLLM/SGLang/llama.cpp (`reasoning_content`, vLLM's newer `reasoning`): Qwen3 by name, in chat mode."""
    with FakeServer(plan=lambda p, a: action) as server:
        rows = run(tmp_path, server, server.openai_url, "r", "--model", "Qwen/Qwen3-8B", "--chat")
    body = server.calls[0].body
    assert body["chat_template_kwargs"] == {"enable_thinking": True}
    assert (body["max_tokens"], body["temperature"]) == (2048 + 20, 0.0)  # thinking budget + the answer's
    answered(rows, THOUGHT)


def test_a_server_reply_cut_off_while_thinking(tmp_path: Path) -> None:
    with FakeServer(plan=lambda p, a: "think-cut") as server:
        cut_off(run(tmp_path, server, server.openai_url, "r", "--model", "Qwen/Qwen3-8B", "--chat"))


def test_reasoning_no_switches_a_templates_thinking_off(tmp_path: Path) -> None:
    with FakeServer() as server:
        rows = run(tmp_path, server, server.openai_url, "r", "--model", "Qwen/Qwen3-8B", "--chat", "--reasoning", "no")
    body = server.calls[0].body
    assert body["chat_template_kwargs"] == {"enable_thinking": False} and body["max_tokens"] == 20
    assert all("reasoning" not in r for r in rows)


def test_an_inline_thought_on_raw_completions(tmp_path: Path) -> None:
    """DeepSeek-R1's distillations write <think>...</think> in the text; a raw prompt keeps the paper's budget."""
    with FakeServer(plan=lambda p, a: "think-inline") as server:
        rows = run(tmp_path, server, server.openai_url, "r", "--model", "deepseek-r1-distill-qwen-7b")
    body = server.calls[0].body
    assert body["max_tokens"] == 20 and "chat_template_kwargs" not in body  # raw: no template, no auto-detection
    answered(rows, THOUGHT)


def test_an_inline_thought_cut_off_is_never_read_for_a_number(tmp_path: Path) -> None:
    with FakeServer(plan=lambda p, a: "think-inline-cut") as server:
        rows = run(tmp_path, server, server.openai_url, "r", "--model", "deepseek-r1-distill-qwen-7b")
    cut_off(rows)
    assert all(r["reasoning"] == THOUGHT for r in rows)  # THOUGHT's first number, 1, is not the score


def test_openai_hidden_reasoning_tokens_are_recorded(tmp_path: Path) -> None:
    with FakeServer(plan=lambda p, a: "hidden") as server:
        rows = run(tmp_path, server, server.openai_url, "r", "--model", "o3-mini")
    assert server.calls[0].body["max_completion_tokens"] == 2048
    for r in rows:
        assert r["usage"]["reasoning_tokens"] == HIDDEN_TOKENS
        assert r["usage"]["answer_tokens"] == r["usage"]["output_tokens"] - HIDDEN_TOKENS == 1
        assert r["reason"] == "number" and "reasoning" not in r


def test_openai_hidden_reasoning_that_used_the_whole_budget_is_thinking_cut_off(tmp_path: Path) -> None:
    with FakeServer(plan=lambda p, a: "hidden-cut") as server:
        cut_off(run(tmp_path, server, server.openai_url, "r", "--model", "o3-mini"))


def test_anthropic_extended_thinking(tmp_path: Path) -> None:
    """Claude thinks only when asked: budget_tokens, max_tokens = budget + answer, thinking and redacted blocks."""
    with FakeServer(plan=lambda p, a: "think") as server:
        rows = run(tmp_path, server, server.anthropic_url, "r", "--model", "claude-sonnet-4-6", "--reasoning", "yes")
    body = server.calls[0].body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048} and body["max_tokens"] == 2068
    assert "temperature" not in body
    answered(rows, THOUGHT + "\n\n[redacted thinking]")
    assert all(r["usage"]["reasoning_tokens"] == len(THOUGHT.split()) for r in rows)


def test_anthropic_cut_off_while_thinking(tmp_path: Path) -> None:
    with FakeServer(plan=lambda p, a: "think-cut") as server:
        rows = run(tmp_path, server, server.anthropic_url, "r", "--model", "claude-sonnet-4-6", "--reasoning", "yes")
    cut_off(rows)


def test_claude_without_reasoning_yes_sends_no_thinking(tmp_path: Path) -> None:
    with FakeServer() as server:
        run(tmp_path, server, server.anthropic_url, "r", "--model", "claude-sonnet-4-6")
    assert "thinking" not in server.calls[0].body and server.calls[0].body["max_tokens"] == 20


def test_a_thought_comes_back_from_the_cache(tmp_path: Path) -> None:
    """A rerun answered from the cache keeps the thought and the reasoning tokens it was paid for."""
    with FakeServer(plan=lambda p, a: "think") as server:
        first = run(tmp_path, server, server.openai_url, "a", "--model", "Qwen/Qwen3-8B", "--chat")
        again = run(tmp_path, server, server.openai_url, "b", "--model", "Qwen/Qwen3-8B", "--chat")
    assert len(server.calls) == LIMIT and again == first


def test_a_report_keeps_a_reasoning_run_apart_from_a_plain_one(tmp_path: Path) -> None:
    """The same model and prompts, plain and thinking (half the replies cut off while thinking): two rows, the
    reasoning one labelled, its thinking-cut-off counted, its thoughts in the sample browser under the answer."""
    prompts: list[str] = []

    def plan(prompt: str, attempt: int) -> str:  # the first run's request of a prompt: a plain answer
        prompts.append(prompt) if prompt not in prompts else None
        return "ok" if attempt == 0 else "think" if prompts.index(prompt) % 2 else "think-cut"

    with FakeServer(plan=plan) as server:
        model = ["--model", "Qwen/Qwen3-8B", "--chat"]
        run(tmp_path, server, server.openai_url, "plain", *model, "--reasoning", "no")
        rows = run(tmp_path, server, server.openai_url, "think", *model)
    assert sorted(r["reason"] for r in rows) == ["number", "number", "thinking-cut-off", "thinking-cut-off"]
    out = write_report([tmp_path / "plain", tmp_path / "think"], tmp_path / "report")
    md = (out / "report.md").read_text()
    reasons = md[md.index("## Reply reasons") :]
    assert "thinking-cut-off" in reasons and "yes: 4 thoughts, 0 reasoning tokens" in reasons
    assert "| Qwen/Qwen3-8B · no reasoning |" in md and "| Qwen/Qwen3-8B · reasoning |" in md  # rows apart
    page = (out / "index.html").read_text()
    assert "reasoning run: 4 thoughts" in page
    block = re.search(r'<script type="application/json" id="samples-R2">(.*?)</script>', page, re.S)
    assert block is not None
    data = json.loads(block[1])
    shown = [dict(zip(data["fields"], row, strict=True)) for row in data["rows"]]
    assert sorted(str(s["reasoning"]) for s in shown) == sorted(str(r.get("reasoning")) for r in rows)


def test_batch_mode_sends_the_thinking_budget_and_keeps_the_thought(tmp_path: Path) -> None:
    """--batch: the same body (thinking budget included) and the same reading of the results as one by one."""
    from tests.fake_batch_server import FakeBatchServer

    extra = ("--model", "claude-sonnet-4-6", "--reasoning", "yes", "--batch", "--batch-poll", "0.05")
    with FakeBatchServer(plan=lambda p, a: "think") as server:
        rows = run(tmp_path, server, server.anthropic_url, "b", *extra)
    (batch,) = server.batches.values()
    assert all(body["thinking"] == {"type": "enabled", "budget_tokens": 2048} for _, body in batch.items)
    answered(rows, THOUGHT + "\n\n[redacted thinking]")
