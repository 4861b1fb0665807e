"""A prompt UTF-8 cannot carry (a lone surrogate, here from a model's rewritten condition) is said to be what it is:
the prompt's, not sent, not retried. It was `malformed reply` (the encoder's ValueError read as the reply's), retried
and blamed on a reply that never existed. The real SDKs against tests/fake_server.py on 127.0.0.1."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from harness.calling.backends.anthropic import AnthropicBackend
from harness.calling.backends.base import PermanentError, RemoteBackend
from harness.calling.backends.openai import OpenAIBackend
from harness.cli.main import main
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


def test_a_rewritten_condition_with_a_lone_surrogate_is_not_blamed_on_the_reply(
    tmp_path: Path, csts_dir: Path, capsys: pytest.CaptureFixture
) -> None:
    def answer(prompt: str) -> str:
        if prompt.startswith("This is a Conditional STS task:"):  # Figure 3: the rewritten condition, escaped in JSON
            return '{"improved_condition": "the colour \\ud800 of it", "justification": ""}'
        return '{"rating": 3, "justification": "x"}'

    with FakeServer(answer=answer) as server:
        code = main(["reannotate", "--backend", "openai", "--model", "annotator", "--base-url", server.openai_url,
                     "--data-dir", str(csts_dir), "--results-dir", str(tmp_path / "results"), "--no-progress",
                     "--limit", "2", "--rewrite-conditions", "--out", str(tmp_path / "labels.tsv")])  # fmt: skip
        rating_calls = [c for c in server.calls if not c.prompt.startswith("This is a Conditional STS task:")]
    err = capsys.readouterr().err
    assert rating_calls == []  # no rating prompt could be sent, and none was tried again
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith(f"error: all 2 requests to openai model 'annotator' failed: {NOT_SENT}")
    assert "malformed reply" not in err
