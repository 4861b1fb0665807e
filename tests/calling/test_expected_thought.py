"""An expected score never comes from a thought (issue 30, item 3): a run that would think first is refused in one
line before anything is sent, and a reply that thinks anyway (a template that opens the thought itself, a raw
prompt) is read at its answer's first token, on both OpenAI wire formats (chat `content[i]` and raw
/v1/completions `tokens[i]` / `top_logprobs[i]`), with the real openai SDK against tests/fake_server.py."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from harness.calling.backends.vllm import completion_from
from harness.cli.main import main
from harness.scoring.reasoning import answer_start
from tests.fake_replies import THOUGHT
from tests.fake_server import FakeServer

LIMIT = 4
# R1-style: the chat template opened the thought, so the reply starts inside it, with a number (2) first.
OPENED = "2 dogs against 7 cats, so not very similar.\n</think>\n\n{answer}"
INLINE = "<think>\n2 dogs against 7 cats.\n</think>\n\n{answer}"
TOKEN = re.compile(r"</?think>|\s+|\d|[A-Za-z]+|[^\sA-Za-z\d]")


def alternatives(token: str) -> dict[str, float]:
    """The fake model's distribution at a position: a digit d gets 0.6 and its neighbour 0.3, a word 0.9."""
    if token.isdigit():
        d = int(token)
        return {token: 0.6, str(d - 1 if d > 1 else d + 1): 0.3}
    return {token: 0.9}


def want(answer: str) -> float:
    probs = alternatives(answer[0])
    return sum(int(k) * p for k, p in probs.items()) / sum(probs.values())


def tokenwise(endpoint: str, request: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
    """Log-probabilities at every output position, in the shape of the endpoint asked: chat `content`, raw
    `tokens`/`top_logprobs`. A thought returned apart (reasoning_content) is spelled first, as vLLM's tokens do."""
    if not request.get("logprobs"):
        return reply
    choice = reply["choices"][0]
    chat = "message" in choice
    text = choice["message"]["content"] if chat else choice["text"]
    thought = choice["message"].get("reasoning_content") if chat else None
    pieces = TOKEN.findall((f"{thought}</think>\n\n" if thought else "") + (text or ""))
    ranked = [alternatives(t) for t in pieces]
    if chat:
        content = [
            {"token": t, "logprob": math.log(r[t]), "top_logprobs": [{"token": a, "logprob": math.log(p)}
                                                                     for a, p in r.items()]}
            for t, r in zip(pieces, ranked, strict=True)
        ]  # fmt: skip
        choice["logprobs"] = {"content": content}
    else:
        choice["logprobs"] = {
            "tokens": pieces,
            "token_logprobs": [math.log(r[t]) for t, r in zip(pieces, ranked, strict=True)],
            "top_logprobs": [{a: math.log(p) for a, p in r.items()} for r in ranked],
        }
    return reply


def run(tmp: Path, url: str, run_id: str, *extra: str) -> list[dict[str, Any]]:
    argv = ["--model", "m", "--dataset", "stsb", "--limit", str(LIMIT), "--base-url", url, "--scoring", "expected",
            "--results-dir", str(tmp), "--run-id", run_id, "--no-progress", *extra]  # fmt: skip
    assert main(argv) == 0
    return [json.loads(line) for line in (tmp / run_id / "samples.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("mode", ["--chat", "--no-chat"])  # chat logprobs; raw /v1/completions logprobs
@pytest.mark.parametrize("shape", [OPENED, INLINE])
def test_a_reply_that_thinks_first_is_read_at_its_answer(mode: str, shape: str, tmp_path: Path) -> None:
    answers = {}

    def answer(prompt: str) -> str:
        answers[prompt] = str(4 - len(answers) % 3)  # 4, 3, 2, 4
        return shape.format(answer=answers[prompt])

    with FakeServer(answer=answer, extras=tokenwise) as server:
        rows = run(tmp_path, server.openai_url, "a", mode)
        again = run(tmp_path, server.openai_url, "b", mode)
    assert len(server.answered) == LIMIT  # the rerun re-requested nothing: every reply came from the cache
    for r in rows:
        a = answers[r["prompt"]]
        assert r["parsed"] == float(a) and r["expected"] == pytest.approx(want(a))  # never the thought's "2"
    assert [r["expected"] for r in again] == [r["expected"] for r in rows]


def test_a_thought_returned_apart_whose_tokens_the_logprobs_spell(tmp_path: Path) -> None:
    with FakeServer(plan=lambda p, a: "think", answer=lambda p: "4", extras=tokenwise) as server:
        rows = run(tmp_path, server.openai_url, "a", "--chat")
    assert THOUGHT.startswith("Sentence 1 mentions 2")  # the thought's first digit would give 2-ish scores
    assert [r["expected"] for r in rows] == pytest.approx([want("4")] * LIMIT)
    assert all(r["reasoning"] == THOUGHT for r in rows)


def test_an_unclosed_thought_gives_no_expected_score(tmp_path: Path) -> None:
    with FakeServer(answer=lambda p: "<think>\n2 dogs and", extras=tokenwise) as server:
        rows = run(tmp_path, server.openai_url, "a", "--chat")
    assert all("expected" not in r or r["expected"] is None for r in rows)
    metrics = json.loads((tmp_path / "a" / "metrics.json").read_text())
    assert metrics["expected_missing"] == LIMIT and "spearman_expected" not in metrics


@pytest.mark.parametrize(
    ("model", "extra", "said"),
    [
        ("Qwen/Qwen3-8B", ["--chat"], "'Qwen/Qwen3-8B' thinks before it answers (its name, with a chat template)"),
        ("deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B", ["--chat"], "thinks before it answers (its name"),
        ("openai/gpt-oss-20b", ["--chat"], "'openai/gpt-oss-20b' thinks before it answers"),
        ("m", ["--reasoning", "yes"], "'m' thinks before it answers (--reasoning yes)"),
        ("Qwen/Qwen3-8B", ["--chat", "--backend", "vllm"], "thinks before it answers"),
        ("Qwen/Qwen3-8B", ["--chat", "--backend", "hf"], "thinks before it answers"),
    ],
)
def test_a_run_that_would_think_first_is_refused_in_one_line(
    model: str, extra: list[str], said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeServer(extras=tokenwise) as server:
        url = [] if "--backend" in extra else ["--base-url", server.openai_url]
        argv = ["--model", model, "--dataset", "stsb", "--limit", "2", *url, "--scoring", "expected", *extra,
                "--results-dir", str(tmp_path / "out")]  # fmt: skip
        rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and err.startswith("error: ") and said in err, err
    assert "--reasoning no" in err and server.calls == [] and not (tmp_path / "out").exists()


def test_reasoning_no_switches_the_thought_off_and_is_accepted(tmp_path: Path) -> None:
    with FakeServer(answer=lambda p: "3", extras=tokenwise) as server:
        rows = run(tmp_path, server.openai_url, "a", "--model", "Qwen/Qwen3-8B", "--chat", "--reasoning", "no")
    assert server.calls[0].body["chat_template_kwargs"] == {"enable_thinking": False}
    assert [r["expected"] for r in rows] == pytest.approx([want("3")] * LIMIT)


@pytest.mark.parametrize(
    ("pieces", "text", "thought", "at"),
    [
        (["4", "."], "4.", None, 0),  # no thought: the first position, as ever
        (["<think>", "\n", "2", "</think>", "\n\n", "4"], "<think>\n2</think>\n\n4", None, 5),
        (["2", " dogs", "</think>", " 4"], "2 dogs</think> 4", None, 3),  # " 4": the answer's own token
        (["2", "</think>4"], "2</think>4", None, None),  # one token holds the delimiter and the answer
        (["2", " dogs"], "4", "2 dogs", None),  # the tokens do not spell the answer: nothing to read
        (["4"], "4", "2 dogs", 0),  # a thought apart, the tokens of the answer alone
        (["2", "</think>", "\n\n", "4"], "2\n\n4", None, 3),  # a text decoded without its special tokens
        (["<think>", "2"], "<think>2", None, None),  # never closed
        (["<|channel|>analysis<|message|>", "2", "<|end|>", "<|start|>assistant", "<|channel|>final<|message|>", "4"],
         "<|channel|>analysis<|message|>2<|end|><|start|>assistant<|channel|>final<|message|>4", None, 5),
    ],
)  # fmt: skip
def test_answer_start(pieces: list[str], text: str, thought: str | None, at: int | None) -> None:
    assert answer_start(pieces, text, thought) == at


def test_vllm_reads_the_answer_after_an_inline_thought() -> None:
    def lp(token: str, p: float) -> SimpleNamespace:
        return SimpleNamespace(decoded_token=token, logprob=math.log(p))

    positions = [{1: lp("2", 0.6), 2: lp("1", 0.3)}, {3: lp("</think>", 1.0)}, {4: lp("4", 0.6), 5: lp("3", 0.3)}]
    sample = SimpleNamespace(text="2</think>4", token_ids=[1, 3, 4], logprobs=positions, finish_reason="stop")
    c = completion_from("r", SimpleNamespace(prompt_token_ids=[9], outputs=[sample]))
    assert c.score_probs == pytest.approx({"4": 0.6, "3": 0.3})
