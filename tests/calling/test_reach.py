"""Permanent conditions stop a run at once with the fix in its one error line (issue 20, classes 11-13; class 10,
certificates and DNS, is in tests/calling/test_transport.py): a server without /v1/completions, a model the server
says it does not have (its model list shown as a hint), a server that is not there yet or at all."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from harness.cli.main import main
from tests.conftest import Polls
from tests.fake_server import FakeServer


def argv(results: Path, url: str, model: str, *extra: str) -> list[str]:
    return ["--model", model, "--base-url", url, "--dataset", "stsb", "--limit", "5",
            "--results-dir", str(results), "--run-id", "r", "--no-progress", *extra]  # fmt: skip


class ChatOnly(FakeServer):
    """Many OpenAI-compatible services serve chat only: POST /v1/completions is aiohttp's plain 404."""

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._openai)
        app.router.add_get("/v1/models", self._models)
        return app


class KnownModelsOnly(FakeServer):
    """As vLLM answers a model it does not serve: 404, "The model `x` does not exist." (code 404)."""

    async def _answer(self, request: web.Request, prompt_of: Any, endpoint: str) -> web.Response:
        model = (await request.json())["model"]
        if model not in (self.models or ()):
            self.calls.append(None)  # type: ignore[arg-type]  # counted, not logged
            error = {"message": f"The model `{model}` does not exist.", "type": "NotFoundError", "code": 404}
            return web.json_response({"error": error}, status=404)
        return await super()._answer(request, prompt_of, endpoint)


def test_raw_prompts_to_a_chat_only_server_say_that_chat_needs_chat(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Class 11: not `HTTP 404: Error code: 404`, but what is missing and the flag that avoids it."""
    with ChatOnly(models=["m"]) as server:
        assert main(argv(tmp_path, server.openai_url, "m")) == 2
        err = capsys.readouterr().err
        assert main([*argv(tmp_path, server.openai_url, "m", "--chat"), "--run-id", "chat"]) == 0
    assert err.count("\n") == 1 and err.startswith("error: openai model 'm': HTTP 404 from ")
    assert "this server has no /v1/completions, which raw text prompts need" in err
    assert "--chat sends each prompt as one chat message to /v1/chat/completions" in err
    assert not (tmp_path / "r").exists() and (tmp_path / "chat").is_dir()


def test_a_model_the_server_does_not_have_names_what_it_lists(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Class 12: the list is read after the server itself said "no such model", to say what it serves."""
    with KnownModelsOnly(models=["qwen2.5-7b", "llama-3.1-8b"]) as server:
        assert main(argv(tmp_path, server.openai_url, "qwen-2.5-7b")) == 2
        assert main([*argv(tmp_path, server.openai_url, "qwen2.5-7b"), "--run-id", "ok"]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"model 'qwen-2.5-7b' is not served at {server.openai_url}/" in err
    assert "it serves 'qwen2.5-7b', 'llama-3.1-8b' (HTTP 404: The model `qwen-2.5-7b` does not exist.)" in err
    assert not (tmp_path / "r").exists() and (tmp_path / "ok").is_dir()


def test_a_server_without_a_model_list_gets_its_own_404_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with KnownModelsOnly(models=None) as server:  # GET /v1/models: 404 too
        assert main(argv(tmp_path, server.openai_url, "gone")) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "HTTP 404: The model `gone` does not exist." in err


def test_a_server_that_is_still_starting_is_waited_for(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], server_polls: Polls
) -> None:
    """Class 13: refused connections before any answer are retried every second for --wait-for-server seconds,
    with one line saying so; a server that comes up meanwhile answers every request (none lost, none failed)."""
    with socket.socket() as sock:  # a port that is free now; the server takes it a moment later
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = FakeServer()
    server.port = port
    server_polls.then = server.__enter__  # up once the first try was refused (not after a time a busy run may need)
    try:
        assert main(argv(tmp_path, f"http://127.0.0.1:{port}/v1", "m", "--wait-for-server", "60")) == 0
    finally:
        server.__exit__(None, None, None)
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"waiting for the server at http://127.0.0.1:{port}/v1/: ")
    assert "connection refused" in err[0] and len(server.answered) == 5
    assert server_polls and set(server_polls) == {1.0}  # polled every second, not backed off for minutes
