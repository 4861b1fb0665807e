"""The lean request path (harness/calling/backends/transport.py `Route`) sends what the SDK's typed create() sends.

"Before" is the real openai / anthropic SDK's typed `create()` over its own default transport, as the backends
sent every request until issue 12; "after" is `backend.send` (our aiohttp session). Both go to tests/fake_server.py
on 127.0.0.1, which keeps each request's body bytes and headers: they must be the same, byte for byte, for every
shape of request the backends make.
"""

from __future__ import annotations

import asyncio
from typing import Any

import anthropic
import openai
import pytest

from harness.calling.backends.anthropic import AnthropicBackend
from harness.calling.backends.base import PermanentError, RetryableError
from harness.calling.backends.openai import OpenAIBackend
from harness.types import Request
from tests.fake_server import FakeServer

KEY = "sk-test-secret-0123456789"
# Non-ASCII, quotes, a backslash, a newline: the SDK keeps UTF-8 as is (ensure_ascii=False) and escapes the rest.
PROMPT = 'Sentence 1: "Ein Café" — naïve\\ 東京.\nSentence 2: a dog. Output:'
# What differs between two requests whatever sends them (the transport's own framing).
TRANSPORT = {"host", "content-length", "connection", "accept-encoding"}

OPENAI_SHAPES: dict[str, dict[str, Any]] = {
    "chat": {},
    "raw prompt": {"chat": False},
    "stop sequences": {"stop": ["\n", "Sentence"]},
    "reasoning model": {"reasoning": True, "reasoning_effort": "low"},
    "max_tokens 5": {"max_tokens": 5},
    # fields the SDK's create() does not name (the SDK sends them in extra_body; the backend leaves them out of
    # its call, and the captured template puts them last): a thinking switch, llama.cpp's grammar, a JSON schema
    # on raw prompts, with log-probabilities
    "thinking switch and grammar": {"model": "Qwen/Qwen3-8B", "reasoning": False, "constrain": (1, 2), "grammar": True},
    "raw prompt, JSON schema": {"chat": False, "constrain": (1, 2, 3), "expected": True, "stop": ["\n"]},
    "raw prompt, grammar": {"chat": False, "constrain": (1, 2, 3), "grammar": True},
}
UNTYPED = {"chat_template_kwargs", "grammar"}  # and response_format on raw prompts
ANTHROPIC_SHAPES: dict[str, dict[str, Any]] = {
    "default": {},
    "greedy (temperature outside the typed call, API version pinned)": {"anthropic_greedy": True},
    "stop sequences": {"stop": ["\n"]},
}


def _sent(server: FakeServer) -> tuple[bytes, dict[str, str]]:
    call = server.calls[-1]
    return call.raw, {k.lower(): v for k, v in call.headers.items() if k.lower() not in TRANSPORT}


async def _sdk_openai(backend: OpenAIBackend, url: str, body: dict[str, Any]) -> None:
    client = openai.AsyncOpenAI(api_key=KEY, base_url=url, max_retries=0, timeout=120.0)
    untyped = UNTYPED | (set() if backend.chat else {"response_format"})
    extra = {k: body.pop(k) for k in list(body) if k in untyped} or None
    try:
        if backend.chat:
            await client.chat.completions.create(**body, extra_body=extra)
        else:
            await client.completions.create(**body, extra_body=extra)
    finally:
        await client.close()


@pytest.mark.parametrize("shape", list(OPENAI_SHAPES))
def test_openai_requests_are_the_bytes_the_sdk_sends(shape: str) -> None:
    request = Request("0", PROMPT, max_tokens=OPENAI_SHAPES[shape].get("max_tokens", 20))
    options = {k: v for k, v in OPENAI_SHAPES[shape].items() if k not in ("max_tokens", "model")}
    with FakeServer() as server:
        backend = OpenAIBackend(OPENAI_SHAPES[shape].get("model", "gpt-4o"), KEY, [server.openai_url], **options)
        if not backend.chat:  # raw prompts go to OpenAI-compatible servers only
            backend = OpenAIBackend("my-model", KEY, [server.openai_url], **options)
        asyncio.run(_sdk_openai(backend, server.openai_url, backend.body(request)))
        before = _sent(server)

        async def lean() -> None:
            try:
                await backend.send(request)
                await backend.send(request)  # the second reuses the captured template
            finally:
                await backend.aclose()

        asyncio.run(lean())
        after = _sent(server)
    assert after[0] == before[0]
    assert after[1] == before[1]
    assert b'"content":"Sentence 1: \\"Ein Caf\xc3\xa9\\"' in after[0] or b'"prompt":"Sentence 1:' in after[0]


async def _sdk_anthropic(backend: AnthropicBackend, url: str, body: dict[str, Any]) -> None:
    headers = {"anthropic-version": "2023-06-01"} if backend.greedy else None
    client = anthropic.AsyncAnthropic(api_key=KEY, base_url=url, max_retries=0, timeout=120.0, default_headers=headers)
    extra = {"temperature": body.pop("temperature")} if "temperature" in body else None
    try:
        await client.messages.create(**body, extra_body=extra)
    finally:
        await client.close()


@pytest.mark.parametrize("shape", list(ANTHROPIC_SHAPES))
def test_anthropic_requests_are_the_bytes_the_sdk_sends(shape: str) -> None:
    with FakeServer() as server:
        backend = AnthropicBackend("claude-sonnet-4-6", KEY, [server.anthropic_url], **ANTHROPIC_SHAPES[shape])
        asyncio.run(_sdk_anthropic(backend, server.anthropic_url, backend.body(Request("0", PROMPT))))
        before = _sent(server)

        async def lean() -> None:
            try:
                await backend.send(Request("0", PROMPT))
            finally:
                await backend.aclose()

        asyncio.run(lean())
        after = _sent(server)
    assert after == before
    assert (b'"temperature":0.0}' in after[0]) == (shape.startswith("greedy"))


def test_errors_keep_the_sdks_types_and_our_policy() -> None:
    """A 429 is retried with its retry-after and marked as a rate limit; a 401 stops the run, the key redacted:
    error replies are classified from their status and JSON fields (no private SDK method), as before."""
    with FakeServer(plan=lambda prompt, attempt: "429" if "limit" in prompt else "ok", api_key=KEY) as server:
        backend = OpenAIBackend("gpt-4o", KEY, [server.openai_url])
        bad = OpenAIBackend("gpt-4o", "sk-wrong-key-000000", [server.openai_url])

        async def both() -> tuple[BaseException | None, BaseException | None]:
            errors: list[BaseException | None] = []
            for b, prompt in ((backend, "rate limit me"), (bad, "hello")):
                try:
                    await b.send(Request("0", prompt))
                    errors.append(None)
                except (RetryableError, PermanentError) as e:
                    errors.append(e)
                finally:
                    await b.aclose()
            return errors[0], errors[1]

        limited, unauthorized = asyncio.run(both())
    assert isinstance(limited, RetryableError) and limited.limited and limited.retry_after is not None
    assert isinstance(unauthorized, PermanentError) and unauthorized.fatal
    assert "sk-wrong-key" not in str(unauthorized)


def test_a_configured_proxy_carries_the_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """HTTP_PROXY in the environment (which the SDKs' httpx honours) sends the request through the proxy: here the
    fake server stands in for the proxy of a host that does not exist, so an answer can only have come through it
    (more proxy cases in tests/calling/test_transport.py)."""
    with FakeServer() as proxy:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        backend = OpenAIBackend("gpt-4o", KEY, ["http://api.example.invalid/v1"])

        async def through() -> str:
            try:
                return (await backend.send(Request("0", "hello"))).text
            finally:
                await backend.aclose()

        assert asyncio.run(through())
        assert len(proxy.calls) == 1
