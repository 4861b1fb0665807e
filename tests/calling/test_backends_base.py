"""The shared error policy and reply hygiene of API backends (harness/calling/backends/base.py)."""

from __future__ import annotations

import email.utils
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from harness.calling.backends.base import (
    PLACEHOLDER_KEY,
    PROXY_AUTH,
    REPLY_CAP_BYTES,
    Decoding,
    LocalBackend,
    PermanentError,
    RetryableError,
    Unreachable,
    api_key,
    clean_reply,
    env_base_url,
    reply_usage,
    retry_after_seconds,
    status_error,
    token_count,
    unencodable_prompt,
)
from harness.calling.cache import ResponseCache
from harness.calling.dispatch import complete_all
from harness.calling.limits import rate_limit
from harness.calling.options import DispatchOptions
from harness.types import Completion, HarnessError, Request, Usage

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


@pytest.mark.parametrize(
    ("status", "message", "code", "sent", "want"),
    [
        # a code that says so is enough, whatever the message (OpenAI's, llama.cpp's)
        (400, "Invalid request", "context_length_exceeded", (), "context_length_exceeded"),
        (400, "Invalid request", "exceed_context_size", (), "context_length_exceeded"),
        (413, "Payload Too Large", None, (), "request_too_large"),
        # a 400 naming a parameter it was not sent is no verdict on the request's shape
        (400, "temperature: range: 0..1", None, (), "bad_request"),
        (400, "stop: too many sequences", None, ("model", "messages"), "bad_request"),
        (418, "Unsupported parameter: 'stop'", "unsupported_parameter", OPENAI_SENT, "bad_request"),  # not a 400/422
        (499, "client closed request", None, (), "bad_request"),  # under 500: not the server's trouble
    ],
)  # fmt: skip
def test_a_4xx_is_that_requests_own_error_named_by_its_kind(
    status: int, message: str, code: str | None, sent: tuple[str, ...], want: str
) -> None:
    e = status_error(status, message, {}, code, None, sent)
    assert isinstance(e, PermanentError) and (e.fatal, e.kind) == (False, want)
    assert str(e) == f"{want}: HTTP {status}: {message}"


def test_a_422_about_the_request_shape_stops_the_run_as_a_400_does() -> None:
    e = status_error(422, "Extra inputs are not permitted", {}, None, None, OPENAI_SENT)
    assert isinstance(e, PermanentError) and (e.fatal, e.kind) == (True, None)


def test_a_proxy_asking_for_credentials_stops_the_run_saying_what_to_do() -> None:
    e = status_error(407, "Proxy Authentication Required", {"retry-after": "1"})
    assert isinstance(e, PermanentError) and e.fatal
    assert str(e) == f"{PROXY_AUTH}; the proxy said: Proxy Authentication Required"


def test_only_a_429_is_the_providers_rate_limit_and_each_says_how_long_to_wait() -> None:
    limited = status_error(429, "slow down", {"retry-after": "2", "x-ratelimit-limit-requests": "60"})
    busy = status_error(503, "overloaded", {"retry-after-ms": "1500"})
    assert isinstance(limited, RetryableError) and isinstance(busy, RetryableError)
    assert (str(limited), limited.retry_after, limited.limited) == ("HTTP 429: slow down", 2.0, True)
    assert limited.rate_limit == rate_limit({"x-ratelimit-limit-requests": "60"})
    assert (str(busy), busy.retry_after, busy.limited, busy.rate_limit) == ("HTTP 503: overloaded", 1.5, False, None)


def test_an_unreachable_server_is_no_rate_limit_and_its_address_holds_no_credentials() -> None:
    e = Unreachable("refused", "https://user:pw-4242@gw.example:8443/v1?api-key=k#frag")
    assert (str(e), e.url, e.retry_after, e.limited, e.rate_limit) == (
        "refused", "https://gw.example:8443/v1", None, False, None
    )  # fmt: skip
    assert Unreachable("refused", "http://127.0.0.1:9/v1/").url == "http://127.0.0.1:9/v1/"


def test_retry_after_headers() -> None:
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after_seconds({"retry-after-ms": "soon", "retry-after": "9"}) == 9.0  # a bad ms: the other
    assert retry_after_seconds({"retry-after": "3"}) == 3.0
    assert retry_after_seconds({"retry-after": "Wed, 21 Oct 2026 07:28:10 GMT"}, now=1792567680.0) == 10.0
    assert retry_after_seconds({"retry-after": "soon"}) is None and retry_after_seconds({}) is None
    # never a negative wait: a clock behind the server's, or a server's negative number
    assert retry_after_seconds({"retry-after-ms": "-5"}) == 0.0 and retry_after_seconds({"retry-after": "-3"}) == 0.0
    assert retry_after_seconds({"retry-after": "Wed, 21 Oct 2026 07:28:10 GMT"}, now=1792567700.0) == 0.0
    # without `now`, the date is counted from the clock
    wait = retry_after_seconds({"retry-after": email.utils.formatdate(time.time() + 3600, usegmt=True)})
    assert wait is not None and 3590 < wait <= 3600


def test_the_key_comes_from_its_variable_and_only_a_server_of_ones_own_goes_without(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TEST_HARNESS_KEY", "  sk-from-env  ")
    assert api_key("TEST_HARNESS_KEY", "openai", ()) == "sk-from-env"
    monkeypatch.setenv("TEST_HARNESS_KEY", " ")
    assert api_key("TEST_HARNESS_KEY", "openai", ["http://127.0.0.1:9/v1"]) == PLACEHOLDER_KEY
    with pytest.raises(HarnessError) as raised:
        api_key("TEST_HARNESS_KEY", "openai", ())
    assert str(raised.value) == "TEST_HARNESS_KEY is not set: the openai backend needs an API key"


def test_an_sdks_base_url_variable_is_read_and_checked_as_base_url_is(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TEST_HARNESS_URL", raising=False)
    assert env_base_url("TEST_HARNESS_URL") is None and env_base_url(None) is None
    monkeypatch.setenv("TEST_HARNESS_URL", "http://127.0.0.1:9/v1?api-key=s3cret-value")
    assert env_base_url("TEST_HARNESS_URL") == "http://127.0.0.1:9/v1?api-key=s3cret-value"
    assert env_base_url(None) is None  # a backend without such a variable reads none
    monkeypatch.setenv("TEST_HARNESS_URL", "http://127.0.0.1:9/v1?api-key=s3cret-value&api-key=s3cret-value")
    with pytest.raises(HarnessError) as raised:
        env_base_url("TEST_HARNESS_URL")
    assert str(raised.value) == (
        "TEST_HARNESS_URL http://127.0.0.1:9/v1: its query names 'api-key' twice; its parameters go with each request, "
        "one value a name"
    )
    monkeypatch.setenv("TEST_HARNESS_URL", "127.0.0.1:9/v1?api-key=s3cret-value")
    with pytest.raises(HarnessError, match=r"^TEST_HARNESS_URL '127\.0\.0\.1:9/v1\?…' needs http:// or https://"):
        env_base_url("TEST_HARNESS_URL")


def test_a_lone_surrogate_is_named_once_each_and_is_that_prompts_error() -> None:
    with pytest.raises(UnicodeEncodeError) as raised:
        "a \ud800\udfff\ud800 b".encode()
    e = unencodable_prompt(raised.value)
    assert (e.fatal, e.kind) == (False, "unencodable_prompt")
    assert str(e).startswith("unencodable_prompt: not sent: the prompt holds U+D800, U+DFFF, a lone surrogate (half")


DIGITS = "".join(f"{i:07d}" for i in range(60_000))  # no two stretches alike: a cut a character off shows


def test_a_reply_of_exactly_the_cap_is_kept_whole() -> None:
    text = "0123456789" * 100_000  # no two neighbours alike: a cut a byte off shows
    assert clean_reply(text, None) == (text, False)
    # one byte over: the last 64,000 bytes kept and the beginning up to the cap, so one byte of the middle goes
    assert clean_reply(text + "y", None) == (text[:936_000] + text[-63_999:] + "y", True)


def test_a_cut_inside_a_character_moves_to_the_next_one() -> None:
    # 1.2 MB of three-byte characters (the subscript digits, U+2080-U+2089, of DIGITS from its fifth): the last 64,000
    # bytes begin at the third byte of a ₉ (E2 82 89: its low bit set, as not every continuation byte has), so the
    # end kept begins with the next character (21,333 of them) and the beginning fills the rest of the 1,000,000 bytes.
    text = "4.0 " + "".join(chr(0x2080 + int(d)) for d in DIGITS[4:400_004])
    stored, cut = clean_reply(text, None)
    assert (stored, cut) == (text[: 4 + 311_999] + text[-21_333:], True)
    assert len(stored.encode()) == REPLY_CAP_BYTES


def test_a_thought_closed_at_the_very_start_keeps_half_the_cap_for_the_end() -> None:
    text = "</think>" + "".join(f"{i:07d}" for i in range(160_000))  # 1.12 MB, no two stretches alike
    stored, cut = clean_reply(text, None)
    assert (stored, cut) == (text[:500_000] + text[-500_000:], True)


@pytest.mark.parametrize(
    ("value", "want"),
    [(1_000_000_000, 1_000_000_000), (1_000_000_001, None), (999_999_999, 999_999_999), (0, 0), (-1, None)],
)
def test_a_token_count_is_at_most_a_billion(value: int, want: int | None) -> None:
    assert token_count(value) == want


def test_a_reply_without_reasoning_counts_none() -> None:
    assert reply_usage({"i": 10, "o": 5}, "i", "o") == Usage(10, 5, 0)
    assert reply_usage({"i": 10, "o": 0}, "i", "o", 4) == Usage(10, 0, 0)


def test_the_default_decoding_is_the_papers() -> None:
    """What a remote backend sends and records unless the run says otherwise: the provider's chat default, no stop
    sequences, 20 output tokens (the paper's generation length), no log-probabilities, no forced answer."""
    assert Decoding() == Decoding(chat=None, stop=(), max_tokens=20, expected=False, constrain=None, grammar=False)


def test_a_local_backends_answers_are_cached_unless_it_says_they_are_free(tmp_path: Path) -> None:
    asked: list[str] = []

    class Local(LocalBackend):
        name, model = "local", "m"

        async def complete(self, requests: Sequence[Request]) -> AsyncIterator[Completion]:
            for r in requests:
                asked.append(r.id)
                yield Completion(r.id, f"{len(r.prompt)}")

        def describe(self) -> dict[str, object]:
            return {}

    requests = [Request("a", "p"), Request("b", "pp")]
    cache = ResponseCache(tmp_path / "c.db")
    try:
        first = complete_all(Local(), requests, options=DispatchOptions(cache=cache))
        again = complete_all(Local(), requests, options=DispatchOptions(cache=cache))
    finally:
        cache.close()
    assert asked == ["a", "b"]  # the second run was answered by the cache
    assert [(c.text, c.cached) for c in first.values()] == [("1", False), ("2", False)]
    assert [(again[r.id].text, again[r.id].cached) for r in requests] == [("1", True), ("2", True)]
