"""What every provider over HTTP inherits from harness/calling/backends/provider.py `HTTPBackend`: where its requests
go (--base-url, else the URL of its SDK's variable, else its own API), whether the prompt goes out as chat, what a
request may be billed for, and the Completion a read reply becomes (capped, every field redacted). Built on the toy
provider of tests/calling/toy_http.py (no SDK) and the OpenAI SDK; nothing is sent: a route opens its session only
when a request goes out (transport.py `Link`)."""

from __future__ import annotations

import dataclasses

import pytest

from harness.calling.backends.base import REPLY_CAP_BYTES, Decoding
from harness.calling.backends.openai import OpenAIBackend
from harness.config.settings import ApiOptions, RunConfig
from harness.types import Completion, HarnessError, RateLimit, Request, Usage
from tests.calling.test_toy_backend import TOY
from tests.calling.toy_http import ToyHTTPBackend

KEY = "toy-provider-key-0123456789"


def test_requests_go_to_base_url_else_the_variables_url_else_the_providers_own() -> None:
    own = ToyHTTPBackend("m", KEY)
    variable = ToyHTTPBackend("m", KEY, env_url="http://127.0.0.1:9/toy?api-key=gw-0123456789")
    given = ToyHTTPBackend("m", KEY, ["http://127.0.0.1:8/toy"], env_url="http://127.0.0.1:9/toy")
    assert [b.base_urls for b in (own, variable, given)] == [
        ["https://toy.invalid"], ["http://127.0.0.1:9/toy?api-key=gw-0123456789"], ["http://127.0.0.1:8/toy"]
    ]  # fmt: skip
    assert variable.routes[0].template is not None
    assert variable.routes[0].template.url == "http://127.0.0.1:9/toy/v1/rate?api-key=gw-0123456789"
    assert "gw-0123456789" in variable.secrets and KEY in variable.secrets  # redacted wherever they come back


def test_a_url_from_the_sdks_variable_is_named_by_that_variable_in_errors_and_any_other_by_base_url() -> None:
    """What an error that asks whether the URL is right names (transport.py Link.named_by): the variable only where
    its URL is the one used; --base-url where the user gave one, or where no variable is named (the SDK's default)."""
    env = "http://127.0.0.1:9/toy"
    cases = [
        (ToyHTTPBackend("m", KEY, env_url=env, url_env="TOY_URL"), "$TOY_URL"),
        (ToyHTTPBackend("m", KEY, ["http://127.0.0.1:8/toy"], env_url=env, url_env="TOY_URL"), "--base-url"),
        (ToyHTTPBackend("m", KEY, url_env="TOY_URL"), "--base-url"),
        (ToyHTTPBackend("m", KEY, env_url=env), "--base-url"),
    ]
    assert [[r.link.named_by for r in b.routes] for b, _ in cases] == [[named] for _, named in cases]


def test_the_sdks_variable_is_read_only_without_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    line = dataclasses.replace(TOY, url_env="TOY_HTTP_URL")
    monkeypatch.setenv("TOY_HTTP_KEY", KEY)
    monkeypatch.setenv("TOY_HTTP_URL", "http://127.0.0.1:9/toy?api-version=7")
    assert ToyHTTPBackend.from_config(RunConfig(model="toyhttp-1"), line).base_urls == [
        "http://127.0.0.1:9/toy?api-version=7"
    ]
    given = RunConfig(model="toyhttp-1", api=ApiOptions(base_urls=("http://127.0.0.1:8/toy",)))
    monkeypatch.setenv("TOY_HTTP_URL", "not a url")  # not read: --base-url wins, as in the SDKs
    assert ToyHTTPBackend.from_config(given, line).base_urls == ["http://127.0.0.1:8/toy"]
    with pytest.raises(HarnessError, match=r"^TOY_HTTP_URL 'not a url' needs http:// or https:// in front"):
        ToyHTTPBackend.from_config(RunConfig(model="toyhttp-1"), line)


def test_an_sdks_variable_query_goes_apart_from_its_url(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK is given the URL without its query (it appends the endpoint's path to the URL as text) and sends the
    query with every request (`default_query`); the route's URL, recorded redacted, keeps it."""
    backend = OpenAIBackend("m", KEY, env_url="http://127.0.0.1:9/v1?api-key=gw-0123456789&api-version=7")
    client = backend.clients[0]
    assert (str(client.base_url), client.default_query) == (
        "http://127.0.0.1:9/v1/", {"api-key": "gw-0123456789", "api-version": "7"}
    )  # fmt: skip
    assert backend.base_urls == ["http://127.0.0.1:9/v1/?api-key=gw-0123456789&api-version=7"]
    assert OpenAIBackend("m", KEY).base_urls == ["https://api.openai.com/v1/"]  # none: the SDK's own default


@pytest.mark.parametrize(("chat", "want"), [(None, True), (True, True), (False, False)])
def test_the_prompt_goes_out_as_chat_unless_told_not_to(chat: bool | None, want: bool) -> None:
    backend = ToyHTTPBackend("m", KEY, ["http://127.0.0.1:9"], decoding=Decoding(chat=chat))
    assert backend.chat is want


def test_a_provider_that_never_thinks_is_billed_for_the_answers_tokens_only() -> None:
    assert ToyHTTPBackend("m", KEY).output_budget(Request("0", "p", max_tokens=7)) == 7


def test_a_read_reply_becomes_a_capped_completion_with_the_key_out_of_every_field() -> None:
    backend = ToyHTTPBackend("m", KEY)
    limits = RateLimit(requests_limit=60, requests_remaining=59)
    said = f"echo {KEY}"
    got = backend.answer("r1", f"4 {said}", Usage(3, 2), said, said, limits, said, said, {"4": 1.0})
    clean = "echo [redacted]"
    assert got == Completion(
        "r1", f"4 {clean}", usage=Usage(3, 2), finish_reason=clean, refusal=clean, served_model=clean,
        truncated=False, rate_limit=limits, reasoning=clean, score_probs={"4": 1.0},
    )  # fmt: skip
    long = "x" * (REPLY_CAP_BYTES + 10)
    capped = backend.answer("r2", "4", Usage(1, 1), "stop", 17, thought=long, refusal=long)
    assert capped.reasoning == capped.refusal == "x" * REPLY_CAP_BYTES
    assert (capped.text, capped.truncated, capped.served_model) == ("4", False, None)  # only the text's cut counts
    assert backend.answer("r3", "4", Usage(1, 1), None) == Completion("r3", "4", usage=Usage(1, 1))
