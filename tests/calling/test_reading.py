"""harness/calling/backends/reading.py: a 200 reply read without losing it, and a gateway's error sent with status
200 read as the error it names (issue 41). Unit tests on bodies as bytes; tests/calling/test_replies.py runs the same
through the real SDK path against tests/fake_server.py."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.calling.backends.base import MalformedReply, NotAnAnswer, PermanentError, RetryableError
from harness.calling.backends.http import Received
from harness.calling.backends.reading import read_reply, reported_error
from harness.types import Completion

KEY = "sk-reading-test-0123456789"


def answer(data: Any) -> Completion:
    """A stand-in for a backend's completion_from: the text of {"choices": [{"text": ...}]}."""
    choices = data.get("choices") if isinstance(data, dict) else None
    if not choices:
        raise NotAnAnswer("no choices")
    if choices[0].get("text") is None:
        raise MalformedReply("malformed reply: no text")
    return Completion("0", choices[0]["text"])


def read(body: object, over: str | None = None) -> Completion:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return read_reply("0", Received(content, None, over), KEY, answer)


@pytest.mark.parametrize(
    ("error", "kind", "said"),
    [
        ({"code": 502, "message": "Upstream provider is down"}, RetryableError, "HTTP 502: Upstream provider is down"),
        ({"code": 599, "message": "x"}, RetryableError, "HTTP 599: x"),
        ({"status": 503, "message": "busy"}, RetryableError, "HTTP 503: busy"),  # `status` where `code` is none
        ({"code": 400, "message": "rejected"}, PermanentError, "bad_request: HTTP 400: rejected"),
        ({"code": 401, "message": f"bad key {KEY}"}, PermanentError, "HTTP 401: bad key [redacted]"),
        ({"code": 399, "message": "x"}, MalformedReply, "malformed reply: x"),  # no error status: no status
        ({"code": 600, "message": "x"}, MalformedReply, "malformed reply: x"),
        ({"code": "502", "message": "x"}, MalformedReply, "malformed reply: x"),  # a string is no status
        ({"code": True, "message": "x"}, MalformedReply, "malformed reply: x"),  # nor is JSON true (Python's 1)
        ({"type": "overloaded_error"}, MalformedReply, 'malformed reply: {"type": "overloaded_error"}'),
        ("Overloaded", MalformedReply, 'malformed reply: "Overloaded"'),
    ],
)
def test_an_error_in_a_200_is_read_as_the_status_it_names(error: object, kind: type, said: str) -> None:
    found = reported_error({"error": error}, KEY)
    assert type(found) is kind and str(found) == f"{said} (an error sent with status 200)"
    with pytest.raises(kind) as raised:
        read({"id": "x", "error": error})
    assert str(raised.value) == str(found)


def test_what_an_error_in_a_200_says_of_the_run() -> None:
    limited = reported_error({"error": {"code": 429, "message": "slow down"}}, KEY)
    assert isinstance(limited, RetryableError) and limited.limited  # the limiter hears of it as of a 429
    assert isinstance(fatal := reported_error({"error": {"code": 403}}, KEY), PermanentError) and fatal.fatal
    request = reported_error({"error": {"code": 400}}, KEY)
    assert isinstance(request, PermanentError) and not request.fatal and request.kind == "bad_request"


@pytest.mark.parametrize(
    "data",
    [
        {"error": {"code": 502}, "choices": [{"text": "3"}]},  # an answer beside it: the answer counts
        {"error": {"code": 502}, "content": [{"type": "text", "text": "3"}]},  # Anthropic's answer
        {"error": None, "choices": []},
        {"error": {}},
        {"error": ""},
        [{"error": {"code": 502}}],
        "error",
    ],
)
def test_no_error_is_read_where_there_is_an_answer_or_no_error(data: object) -> None:
    assert reported_error(data, KEY) is None


def test_json_of_no_answers_shape_is_kept_as_malformed() -> None:
    for body in ([{"generated_text": "3"}], {"id": "x"}, {"error": None, "choices": []}):
        kept = read(body)
        assert (kept.text, kept.malformed, kept.raw) == ("", "unreadable: NotAnAnswer: no choices", json.dumps(body))
    assert read({"choices": [{"text": "3.0"}]}).text == "3.0"


def test_a_body_that_is_no_json_or_says_no_text_is_retried_and_the_rest_kept() -> None:
    with pytest.raises(MalformedReply, match="malformed reply: Expecting"):
        read(b'{"choices": [')
    with pytest.raises(MalformedReply, match="malformed reply: no text"):
        read({"choices": [{"text": None}]})
    deep = read(b"[" * 100_000 + b"]" * 100_000)
    assert deep.malformed == "too-deep: JSON nested deeper than the decoder reads" and deep.text == ""
    big = read(b'{"choices": [{"text": "3"}]}', over="over --max-reply-mb 1")
    assert big.malformed == "too-large: over --max-reply-mb 1" and big.raw == '{"choices": [{"text": "3"}]}'


def test_what_a_reply_says_is_cut_to_its_first_characters_and_the_key_redacted() -> None:
    said = reported_error({"error": {"code": 502, "message": "m" * 400}}, KEY)
    assert str(said) == f"HTTP 502: {'m' * 300} (an error sent with status 200)"

    def failing(data: Any) -> Completion:
        raise LookupError(f"{KEY} " + "k" * 400)

    kept = read_reply("7", Received(b'{"choices": []}', None), KEY, failing)
    assert kept.malformed == "unreadable: LookupError: [redacted] " + "k" * (200 - len("[redacted] "))
    assert (kept.request_id, kept.raw) == ("7", '{"choices": []}')
