"""A prompt UTF-8 cannot carry (a lone surrogate, here from a model's rewritten condition) is said to be what it is:
the prompt's, not sent, not retried. It was `malformed reply` (the encoder's ValueError read as the reply's), retried
and blamed on a reply that never existed. A model's rewritten condition that holds one is not used as a condition
(reannotate marks the row and goes on). The real SDKs against tests/fake_server.py on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from harness.calling.backends.anthropic import AnthropicBackend
from harness.calling.backends.base import PermanentError, RemoteBackend
from harness.calling.backends.openai import OpenAIBackend
from harness.cli.main import main
from harness.datasets.choose import load_dataset
from harness.types import Request
from tests.fake_server import FakeServer

NOT_SENT = (
    "unencodable_prompt: not sent: the prompt holds U+D800, a lone surrogate (half of a UTF-16 pair, not a character)"
)


def send(backend: RemoteBackend, prompt: str) -> object:
    async def go() -> object:
        try:
            return await backend.send(Request("0", prompt))
        finally:
            await backend.aclose()

    return asyncio.run(go())


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_lone_surrogate_in_the_prompt_is_the_prompts_and_nothing_is_sent(kind: str) -> None:
    with FakeServer() as server:
        backend: RemoteBackend = (
            OpenAIBackend("m", "k", [server.openai_url])
            if kind == "openai"
            else AnthropicBackend("m", "k", [server.anthropic_url])
        )
        with pytest.raises(PermanentError) as raised:
            send(backend, "Condition: the colour \ud800 of it")
        assert server.calls == []
    assert str(raised.value).startswith(NOT_SENT)
    assert not raised.value.fatal and raised.value.kind == "unencodable_prompt"  # this request's error, not retried


def test_a_rewritten_condition_with_a_lone_surrogate_marks_its_row_and_the_rest_finish(
    tmp_path: Path, csts_dir: Path, capsys: pytest.CaptureFixture
) -> None:
    """Issue 41: the second row's rewritten condition holds a lone surrogate (the server's JSON "\\ud800"). It was
    used as the condition: the command stopped on it (a traceback hashing the conditions; before that, every
    rating prompt under it failed). Now that reply is `unencodable`, counted, the row keeps its original condition,
    and every row is rated and written."""
    rewritten = iter(["the colour of it", "the colour \ud800 of it", "the size of it"])  # dumps escapes it

    def answer(prompt: str) -> str:
        if prompt.startswith("This is a Conditional STS task:"):  # Figure 3: the rewritten condition, escaped in JSON
            return json.dumps({"improved_condition": next(rewritten), "justification": ""})
        return '{"rating": 3, "justification": "x"}'

    out = tmp_path / "labels.tsv"
    with FakeServer(answer=answer) as server:
        code = main(["reannotate", "--backend", "openai", "--model", "annotator", "--base-url", server.openai_url,
                     "--data-dir", str(csts_dir), "--results-dir", str(tmp_path / "results"), "--no-progress",
                     "--limit", "3", "--rewrite-conditions", "--out", str(out),
                     "--concurrency", "1"])  # fmt: skip  # one at a time: the rewrites are answered in the rows' order
        rating_prompts = [c.prompt for c in server.calls if not c.prompt.startswith("This is a Conditional STS task:")]
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert len(rating_prompts) == 3 and not any("\ud800" in p for p in rating_prompts)
    rows = [line.split("\t") for line in out.read_text(encoding="utf-8").splitlines()[1:]]
    original = {e.id: e.condition for e in load_dataset("csts", "validation", csts_dir).examples}
    assert [cond for _, _, cond in rows] == ["the colour of it", original[rows[1][0]], "the size of it"]
    record = json.loads(out.with_name("labels.agreement.json").read_text(encoding="utf-8"))
    assert (record["conditions"]["unencodable"], record["conditions"]["kept_original_after_invalid_reply"]) == (1, 1)
    replies = [json.loads(line) for line in out.with_name("labels.replies.jsonl").read_text().splitlines()]
    assert [r["status"] for r in replies if r["step"] == "condition"] == ["json", "unencodable", "json"]
    assert replies[1]["reply"] == '{"improved_condition": "the colour \\ud800 of it", "justification": ""}'  # as paid
    assert "1 unencodable" in captured.out
