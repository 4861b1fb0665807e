"""calling/backends/reading.py on replies made here: a 200 reply's body read into a Completion without losing it,
and which stored Completion a run with another --max-reply-mb may take as its own (`holds`)."""

from __future__ import annotations

import json

import pytest

from harness.calling.backends.base import MalformedReply
from harness.calling.backends.http import Received
from harness.calling.backends.reading import TOO_DEEP, TOO_LARGE, UNREADABLE, holds, read_reply
from harness.calling.redaction import REDACTED
from harness.types import Completion, RateLimit

KEY = "sk-secret-key-123456"


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
