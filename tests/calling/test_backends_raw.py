"""OpenAI-compatible servers: raw prompts to /v1/completions or one chat message to /v1/chat/completions,
recorded in config.json and the cache key; `body()` is what goes on the wire; --stop and --max-tokens;
a --base-url with any model name means the OpenAI-compatible backend (its /v1/models list a hint, not a gate)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from harness.calling.backends.anthropic import AnthropicBackend
from harness.calling.backends.choose import make_backend
from harness.calling.backends.openai import OpenAIBackend
from harness.calling.cache_keys import request_key
from harness.cli.main import main
from harness.config.settings import ApiOptions, RunConfig
from harness.types import HarnessError, Request
from harness.variants.validate import validate_run
from tests.fake_server import FakeServer, default_answer

REQ = Request("0", "Sentence 1: a cat.\nSentence 2: a dog.\nOutput:", max_tokens=7)


def argv(results: Path, server: FakeServer, model: str, *extra: str) -> list[str]:
    return ["--model", model, "--base-url", server.openai_url, "--dataset", "stsb", "--limit", "5",
            "--results-dir", str(results), "--run-id", "r", "--no-progress", *extra]  # fmt: skip


def read(run_dir: Path) -> tuple[list[dict], dict]:
    rows = [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]
    return rows, json.loads((run_dir / "config.json").read_text())


def send(backend: OpenAIBackend | AnthropicBackend, request: Request = REQ) -> object:
    async def once() -> object:
        try:
            return await backend.send(request)
        finally:
            await backend.aclose()

    return asyncio.run(once())


def test_a_server_model_gets_the_rendered_prompt_verbatim_at_v1_completions_by_default(tmp_path: Path) -> None:
    with FakeServer(served_model="HuggingFaceTB/SmolLM2-135M-Instruct") as server:
        assert main(argv(tmp_path, server, "HuggingFaceTB/SmolLM2-135M-Instruct")) == 0  # no --backend needed
    rows, config = read(tmp_path / "r")
    assert {c.path for c in server.calls} == {"/v1/completions"}
    # exactly the rendered text (requests go out concurrently: in any order)
    assert sorted(c.body["prompt"] for c in server.calls) == sorted(r["prompt"] for r in rows)
    assert all("messages" not in c.body for c in server.calls)
    params = config["backend_params"]
    assert config["backend"] == "openai" and params["chat"] is False and params["endpoint"] == "/v1/completions"
    assert all(r["output"] == default_answer(r["prompt"]) and r["finish_reason"] == "stop" for r in rows)
    assert all(r["served_model"] == "HuggingFaceTB/SmolLM2-135M-Instruct" for r in rows)
    assert all(r["usage"]["input_tokens"] == len(r["prompt"].split()) for r in rows)


def test_chat_sends_one_user_message_to_v1_chat_completions(tmp_path: Path) -> None:
    with FakeServer() as server:
        assert main(argv(tmp_path, server, "my-model", "--chat")) == 0
    rows, config = read(tmp_path / "r")
    assert {c.path for c in server.calls} == {"/v1/chat/completions"}
    sent = sorted(c.body["messages"][0]["content"] for c in server.calls)  # concurrent: in any order
    assert all(len(c.body["messages"]) == 1 and c.body["messages"][0]["role"] == "user" for c in server.calls)
    assert sent == sorted(r["prompt"] for r in rows)
    assert config["backend_params"]["chat"] is True and config["backend_params"]["endpoint"] == "/v1/chat/completions"


@pytest.mark.parametrize("chat", [True, False])
def test_body_is_exactly_what_goes_on_the_wire(chat: bool) -> None:
    with FakeServer() as server:
        backend = OpenAIBackend("m", "EMPTY", [server.openai_url], chat=chat, stop=["\n"], max_tokens=7)
        send(backend)
    (call,) = server.calls
    assert call.path == backend.endpoint and call.body == backend.body(REQ)
    prompt = {"messages": [{"role": "user", "content": REQ.prompt}]} if chat else {"prompt": REQ.prompt}
    assert call.body == {"model": "m", **prompt, "max_tokens": 7, "temperature": 0.0, "stop": ["\n"]}


def test_anthropic_body_is_exactly_what_goes_on_the_wire() -> None:
    with FakeServer() as server:
        backend = AnthropicBackend("claude-x", "k" * 20, [server.anthropic_url], anthropic_greedy=True, stop=["\n"])
        send(backend)
    (call,) = server.calls
    assert call.path == backend.endpoint == "/v1/messages" and call.body == backend.body(REQ)
    assert call.body["stop_sequences"] == ["\n"] and call.body["temperature"] == 0.0


def test_raw_and_chat_are_different_cache_keys_and_configs() -> None:
    raw = OpenAIBackend("m", "EMPTY", ["http://127.0.0.1:9/v1"])
    chat = OpenAIBackend("m", "EMPTY", ["http://127.0.0.1:9/v1"], chat=True)
    assert request_key(raw, REQ) != request_key(chat, REQ)
    assert raw.describe()["api"] == "completions" and chat.describe()["api"] == "chat.completions"


@pytest.mark.parametrize(
    ("model", "backend", "base_urls", "chat"),
    [("gpt-4o", None, (), True), ("gpt-4o", None, ("http://127.0.0.1:9/v1",), True),
     ("llama", None, ("http://127.0.0.1:9/v1",), False), ("claude-sonnet-4-6", None, (), True)],
)  # fmt: skip
def test_defaults_hosted_models_chat_servers_raw(
    model: str, backend: str | None, base_urls: tuple[str, ...], chat: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-x")
    built = make_backend(RunConfig(model=model, backend=backend, api=ApiOptions(base_urls=base_urls)))
    assert built.describe()["chat"] is chat


@pytest.mark.parametrize("model", ["gpt-4o", "claude-sonnet-4-6"])
def test_no_chat_is_refused_for_hosted_models_in_one_line(
    model: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-x")
    args = ["--model", model, "--no-chat", "--dataset", "stsb", "--results-dir", str(tmp_path)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--no-chat" in err and "chat-only" in err and not list(tmp_path.iterdir())


def test_stop_and_max_tokens_are_sent_and_recorded(tmp_path: Path) -> None:
    with FakeServer() as server:
        assert main(argv(tmp_path, server, "m", "--stop", "\n", "--stop", "Sentence", "--max-tokens", "5")) == 0
        assert main([*argv(tmp_path, server, "m"), "--run-id", "plain"]) == 0
    assert all(c.body["stop"] == ["\n", "Sentence"] and c.body["max_tokens"] == 5 for c in server.calls[:5])
    assert all("stop" not in c.body and c.body["max_tokens"] == 20 for c in server.calls[5:])
    _, config = read(tmp_path / "r")
    _, plain = read(tmp_path / "plain")
    assert config["backend_params"]["sent"] == {"max_tokens": 5, "temperature": 0.0, "stop": ["\n", "Sentence"]}
    assert config["config_hash"] != plain["config_hash"]


def test_stop_is_refused_where_it_would_not_be_sent() -> None:
    config = RunConfig(model="tiny", backend="hf", stop=("\n",))
    with pytest.raises(HarnessError, match="--stop: the hf backend does not send stop sequences"):
        validate_run(config)  # runs before any backend is built, in real and dry runs alike


def test_the_model_list_is_a_hint_not_a_gate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 20 class 12: servers list names differently from what they accept (Ollama lists `llama3.2:latest` and
    answers `llama3.2`), so a model missing from GET /v1/models is sent anyway; the list is asked only to explain
    a 404 (tests/calling/test_reach.py)."""
    with FakeServer(models=["llama3.2:latest"]) as server:
        assert main(argv(tmp_path, server, "llama3.2")) == 0
    assert len(server.calls) == 5 and all(c.body["model"] == "llama3.2" for c in server.calls)
    assert "error" not in capsys.readouterr().err


def test_a_server_without_a_model_list_is_not_checked(tmp_path: Path) -> None:
    with FakeServer(models=None) as server:  # GET /v1/models answers 404
        assert main(argv(tmp_path, server, "anything")) == 0
