"""harness/calling/backends/reading.py: a 200 reply read without losing it (issue 41), a gateway's error sent with
status 200 read as the error it names, and which stored Completion a run with another --max-reply-mb may take as its
own (`holds`). Unit tests on bodies as bytes; tests/calling/test_replies.py runs the same through the real SDK path
against tests/fake_server.py."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.calling.backends.base import MalformedReply, NotAnAnswer, PermanentError, RetryableError
from harness.calling.backends.reading import (
    TOO_DEEP,
    TOO_LARGE,
    UNREADABLE,
    Received,
    holds,
    read_reply,
    reported_error,
)
from harness.calling.redaction import REDACTED
from harness.types import Completion, RateLimit

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


def text_of(data: object) -> Completion:
    return Completion("q", str(data["text"]))  # type: ignore[index]


def test_a_json_reply_is_read_by_the_backends_rule() -> None:
    got = read_reply("q", Received(b'{"text": "4"}', None), KEY, text_of)
    assert got == Completion("q", "4")


def test_a_reply_over_the_cap_is_a_too_large_verdict_with_its_first_bytes() -> None:
    limits = RateLimit()
    over = "the reply's body is over 1 MB (it goes on past that); --max-reply-mb raises the cap"
    got = read_reply("q", Received(b'{"text": "4', limits, over), KEY, text_of)
    assert (got.text, got.malformed, got.raw, got.truncated) == ("", f"{TOO_LARGE}: {over}", '{"text": "4', False)
    assert got.rate_limit is limits and got.error is None


def test_json_too_deep_for_the_decoder_is_kept_as_malformed() -> None:
    body = b"[" * 100_000 + b"]" * 100_000
    got = read_reply("q", Received(body, None), KEY, text_of)
    assert got.malformed == f"{TOO_DEEP}: JSON nested deeper than the decoder reads"
    assert got.raw == body.decode() and not got.truncated


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b'{"text": "4"', "Expecting ',' delimiter: line 1 column 13 (char 12)"),
        (b'{"a": "\xff"}', "'utf-8' codec can't decode byte 0xff in position 7: invalid start byte"),
        (b"not json", "Expecting value: line 1 column 1 (char 0)"),
    ],
)
def test_a_body_that_is_not_json_is_a_broken_delivery_to_retry(body: bytes, why: str) -> None:
    with pytest.raises(MalformedReply) as e:
        read_reply("q", Received(body, None), KEY, text_of)
    assert str(e.value) == f"malformed reply: {why}"


def test_what_reading_says_is_capped_and_redacted() -> None:
    def long(data: object) -> Completion:
        raise ValueError(f"{KEY} " + "x" * 500)

    got = read_reply("q", Received(b"{}", None), KEY, long)
    assert got.malformed == f"{UNREADABLE}: ValueError: " + (f"{REDACTED} " + "x" * 500)[:200]


def test_a_reply_the_rule_cannot_read_is_kept_with_the_key_redacted() -> None:
    body = json.dumps({"other": KEY}).encode()
    got = read_reply("q", Received(body, None), KEY, text_of)
    assert got.malformed == f"{UNREADABLE}: KeyError: 'text'" and got.text == ""
    assert got.raw is not None and KEY not in got.raw and got.raw.startswith('{"other": ')


def test_a_malformed_reply_raised_by_the_rule_is_retried() -> None:
    def refuse(data: object) -> Completion:
        raise MalformedReply("malformed reply: no choices")

    with pytest.raises(MalformedReply, match="no choices"):
        read_reply("q", Received(b"{}", None), KEY, refuse)


@pytest.mark.parametrize(
    ("malformed", "cap", "holds_"),
    [
        (None, 0.5, True),
        ("unreadable: KeyError: 'x'", 100.0, True),  # an answer read otherwise: not a cap's verdict
        ("too-large: the reply's body is over 1 MB (it goes on past that); --max-reply-mb raises", 1.0, True),
        ("too-large: the reply's body is over 1 MB (it goes on past that); --max-reply-mb raises", 0.5, True),
        ("too-large: the reply's body is over 1 MB (it goes on past that); --max-reply-mb raises", 1.5, False),
        ("too-large: the reply's body is over 1.23457 MB (...)", 1.2345678, True),  # written {:g}: the same
        ("too-large: the reply's body is over 1.23457 MB (...)", 1.23458, False),
        ("too-large: the reply's body is over 1e-05 MB (...)", 1e-05, True),
        ("too-large: the reply's body is over 1e-05 MB (...)", 2e-05, False),
        ("too-large: the reply's body is over 1.0 MB (...)", 1.0, True),  # another spelling of the same cap
        ("too-large: over nothing MB", 1.0, False),  # a verdict whose cap cannot be read is asked again
        ("too-large: the reply's body is over 1.2.3 MB (...)", 1.0, False),
        ("too-large: no cap said", 1.0, False),
    ],
)
def test_holds_compares_the_verdicts_cap_with_the_runs(malformed: str | None, cap: float, holds_: bool) -> None:
    assert holds(Completion("q", "", malformed=malformed), cap) is holds_
