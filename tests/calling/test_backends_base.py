"""The shared error policy and reply hygiene of API backends (harness/calling/backends/base.py)."""

from __future__ import annotations

import pytest

from harness.calling.backends.base import (
    PLACEHOLDER_KEY,
    REPLY_CAP_BYTES,
    PermanentError,
    RetryableError,
    clean_reply,
    status_error,
)

OPENAI_SENT = ("model", "messages", "max_tokens", "temperature")


@pytest.mark.parametrize(
    ("status", "message", "code", "param"),
    [
        # OpenAI
        (400, "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
         "context_length_exceeded", "messages"),
        # vLLM (two releases' wording), llama.cpp, TGI, Anthropic
        (400, "This model's maximum context length is 2048 tokens. However, you requested 2100 tokens (2080 in the "
         "messages, 20 in the completion).", None, None),
        (400, "'max_tokens' or 'max_completion_tokens' is too large: 20. This model's maximum context length is 2048 "
         "tokens and your request has 2040 input tokens (20 > 2048 - 2040).", "BadRequestError", None),
        (400, "The decoder prompt (length 5000) is longer than the maximum model length of 4096.", None, None),
        (400, "the request exceeds the available context size, try increasing it", "400", None),
        (422, "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4090 `inputs` "
         "tokens and 20 `max_new_tokens`", None, None),
        (400, "prompt is too long: 210000 tokens > 200000 maximum", None, None),
    ],
)  # fmt: skip
def test_context_length_is_named_and_is_one_requests_error(
    status: int, message: str, code: str | None, param: str | None
) -> None:
    e = status_error(status, message, {}, code, param, OPENAI_SENT)
    assert isinstance(e, PermanentError) and not e.fatal and e.kind == "context_length_exceeded"
    assert str(e) == f"context_length_exceeded: HTTP {status}: {message}"


@pytest.mark.parametrize(
    ("message", "code", "param"),
    [
        ("Unsupported parameter: 'max_tokens' is not supported.", "unsupported_parameter", "max_tokens"),
        ("Unsupported value: 'temperature' does not support 0 with this model.", "unsupported_value", "temperature"),
        ("Invalid type for 'stop': expected a string or array.", None, "stop"),
        ("temperature: range: 0..1", None, None),
        ("max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens", None, None),
        ("Extra inputs are not permitted", None, None),
    ],
)  # fmt: skip
def test_a_400_about_the_request_shape_stops_the_run(message: str, code: str | None, param: str | None) -> None:
    e = status_error(400, message, {}, code, param, OPENAI_SENT)
    assert isinstance(e, PermanentError) and e.fatal


@pytest.mark.parametrize(
    ("message", "param"),
    [
        ("Invalid prompt: your prompt was flagged as potentially violating our usage policy.", None),
        ("Invalid 'messages[0].content': string too long.", "messages[0].content"),
        ("messages: text content blocks must be non-empty", None),
        ("This request is not valid for this model.", None),
    ],
)
def test_any_other_400_is_that_requests_own_error(message: str, param: str | None) -> None:
    e = status_error(400, message, {}, None, param, OPENAI_SENT)
    assert isinstance(e, PermanentError) and not e.fatal and e.kind == "bad_request"


@pytest.mark.parametrize("status", [401, 403, 404])
def test_auth_and_missing_model_stop_the_run(status: int) -> None:
    e = status_error(status, "no", {})
    assert isinstance(e, PermanentError) and e.fatal and e.kind is None


@pytest.mark.parametrize("status", [408, 409, 429, 500, 503, 529])
def test_rate_limits_and_server_errors_are_retried(status: int) -> None:
    assert isinstance(status_error(status, "busy", {}), RetryableError)


def test_a_reply_over_the_cap_is_cut_at_a_character_boundary_and_flagged() -> None:
    text = "4.0 " + "é" * REPLY_CAP_BYTES  # two bytes each: the cut falls inside one
    stored, truncated = clean_reply(text, None)
    assert truncated and len(stored.encode()) == REPLY_CAP_BYTES and stored.startswith("4.0 ")
    assert clean_reply("3.5", None) == ("3.5", False)


def test_a_reply_quoting_the_key_is_redacted_but_the_placeholder_key_is_not() -> None:
    assert clean_reply("echo sk-abcdef123456 back", "sk-abcdef123456") == ("echo [redacted] back", False)
    assert clean_reply("EMPTY is a word", PLACEHOLDER_KEY) == ("EMPTY is a word", False)
