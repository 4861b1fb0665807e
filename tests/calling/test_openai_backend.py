"""harness/calling/backends/openai.py's own mirror: what each setting puts in the body (and so on the wire, through
the real openai SDK to tests/fake_server.py), what describe() records, how a 404 is explained, and how every shape of
reply JSON is read (`completion_from`, which the batch path calls too). Fast: no run_eval, one request a server."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp import web

from harness.calling.backends import BACKENDS
from harness.calling.backends.base import MalformedReply, NotAnAnswer, PermanentError
from harness.calling.backends.openai import OpenAIBackend
from harness.calling.backends.openai_logprobs import logprob_fields, score_probs_from
from harness.config.settings import RunConfig
from harness.scoring.constrained import gbnf, response_format
from harness.types import Completion, HarnessError, Request, Usage
from tests.calling.test_backends_api import send
from tests.fake_server import FakeServer, default_answer

KEY = "sk-test-secret-0123456789"
REQ = Request("7", "Sentence 1: a cat.\nSentence 2: a dog.\nOutput:", max_tokens=9)
SERVER = "http://127.0.0.1:9/v1"  # never reached: these backends only build bodies or read replies
SCALE = (1, 2, 3, 4, 5)


def refusal_of(backend: OpenAIBackend) -> PermanentError:
    with pytest.raises(PermanentError) as err:
        send(backend, REQ)
    return err.value


class ErrorServer(FakeServer):
    """Answers every request with one error reply of its own (FakeServer's faults have no `code` on a 404)."""

    def __init__(self, status: int, error: dict[str, Any], **kw: Any) -> None:
        super().__init__(**kw)
        self.status, self.error = status, error

    async def _answer(self, request: web.Request, prompt_of: Any, endpoint: str) -> web.Response:
        await self._begin(request, prompt_of)
        return web.json_response({"error": self.error}, status=self.status)


# --- setup: chat or raw, refusals ----------------------------------------------------------------------------------


def test_no_chat_without_a_server_is_refused_in_words() -> None:
    with pytest.raises(HarnessError) as err:
        OpenAIBackend("gpt-4o", KEY, chat=False)
    assert str(err.value) == (
        "--no-chat: hosted OpenAI models are chat-only ('gpt-4o'); raw prompts need an OpenAI-compatible server "
        "(--base-url)"
    )


@pytest.mark.parametrize(
    ("model", "urls", "chat", "want"),
    [
        ("gpt-4o", (), None, True),  # hosted: chat
        ("gpt-4o", (), True, True),  # hosted, --chat: no refusal
        ("llama", (SERVER,), None, False),  # a server's model: raw by default
        ("llama", (SERVER,), True, True),  # --chat wins over the default
        ("gpt-4o", (SERVER,), False, False),  # --no-chat at a server: raw, no refusal
    ],
)
def test_chat_is_the_flag_where_given_else_the_default(
    model: str, urls: tuple[str, ...], chat: bool | None, want: bool
) -> None:
    backend = OpenAIBackend(model, KEY, urls, chat=chat)
    assert backend.chat is want and backend.endpoint == ("/v1/chat/completions" if want else "/v1/completions")


def test_the_sdks_own_retries_are_off() -> None:
    """Dispatch retries (attempts.py); the SDK retrying too would multiply the tries and the bill."""
    assert OpenAIBackend("gpt-4o", KEY).clients[0].max_retries == 0


# --- the request body ----------------------------------------------------------------------------------------------


def test_a_plain_model_gets_max_tokens_and_temperature_and_records_deterministic_decoding() -> None:
    backend = OpenAIBackend("gpt-4o", KEY, [SERVER])
    assert backend.params(REQ) == {"max_tokens": 9, "temperature": 0.0}
    record = backend.describe()
    assert record["sent"] == {"max_tokens": 20, "temperature": 0.0} and record["deterministic"] is True
    assert "note" not in record and "omitted" not in record and record["reasoning_model"] is False


@pytest.mark.parametrize(("effort", "want"), [(None, {}), ("high", {"reasoning_effort": "high"})])
def test_a_reasoning_model_gets_one_cap_and_its_effort_where_given(effort: str | None, want: dict[str, str]) -> None:
    backend = OpenAIBackend("o3", KEY, reasoning_tokens=500, reasoning_effort=effort)
    assert backend.params(REQ) == {"max_completion_tokens": 500, **want}
    record = backend.describe()
    assert record["omitted"] == ["temperature", "max_tokens"] and record["deterministic"] is False
    assert str(record["note"]).startswith("reasoning model: it rejects temperature and max_tokens")


def test_an_open_reasoning_model_shares_max_tokens_and_gets_its_thinking_switch() -> None:
    backend = OpenAIBackend("Qwen/Qwen3-8B", KEY, [SERVER], chat=True, reasoning_tokens=300)
    params = {"max_tokens": 309, "temperature": 0.0, "chat_template_kwargs": {"enable_thinking": True}}
    assert backend.params(REQ) == params
    record = backend.describe()
    assert record["note"] == (
        "open reasoning model: 300 thinking tokens plus the answer's in max_tokens; "
        "the paper's 20-token budget is not applicable"
    )
    assert "omitted" not in record and record["reasoning_model"] is True


def test_reasoning_no_switches_an_open_models_thinking_off_in_the_body() -> None:
    backend = OpenAIBackend("Qwen/Qwen3-8B", KEY, [SERVER], chat=True, reasoning=False)
    params = {"max_tokens": 9, "temperature": 0.0, "chat_template_kwargs": {"enable_thinking": False}}
    assert backend.params(REQ) == params and "note" not in backend.describe()


@pytest.mark.parametrize("chat", [True, False])
@pytest.mark.parametrize(
    ("options", "fields"),
    [
        ({}, lambda chat: {}),
        ({"expected": True}, logprob_fields),
        ({"constrain": SCALE}, lambda chat: {"response_format": response_format(SCALE)}),
        ({"constrain": SCALE, "grammar": True}, lambda chat: {"grammar": gbnf(SCALE)}),
        ({"grammar": True}, lambda chat: {}),  # a grammar without a scale: nothing to force
        ({"expected": True, "constrain": SCALE},
         lambda chat: logprob_fields(chat) | {"response_format": response_format(SCALE)}),
    ],
)  # fmt: skip
def test_each_protocol_setting_adds_its_fields_and_they_reach_the_wire(
    chat: bool, options: dict[str, Any], fields: Any
) -> None:
    with FakeServer() as server:
        backend = OpenAIBackend("m", "EMPTY", [server.openai_url], chat=chat, stop=["\n"], **options)
        send(backend, REQ)
    prompt = {"messages": [{"role": "user", "content": REQ.prompt}]} if chat else {"prompt": REQ.prompt}
    want = {"model": "m", **prompt, "max_tokens": 9, "temperature": 0.0, "stop": ["\n"], **fields(chat)}
    (call,) = server.calls
    assert backend.body(REQ) == want and call.body == want and call.path == backend.endpoint


def test_the_thinking_switch_reaches_the_wire_beside_the_typed_fields() -> None:
    with FakeServer() as server:
        backend = OpenAIBackend("Qwen/Qwen3-8B", "EMPTY", [server.openai_url], chat=True, reasoning=False)
        send(backend, REQ)
    (call,) = server.calls
    assert call.body == backend.body(REQ) and call.body["chat_template_kwargs"] == {"enable_thinking": False}


# --- a 404 explained -----------------------------------------------------------------------------------------------

NOT_FOUND = "The model does not exist or you do not have access to it."  # tests/fake_replies.py's 404


@pytest.mark.parametrize(
    ("served", "shown"),
    [
        (["a", "b"], "'a', 'b'"),
        ([f"m{i}" for i in range(10)], ", ".join(f"'m{i}'" for i in range(10))),
        ([f"m{i}" for i in range(11)], ", ".join(f"'m{i}'" for i in range(10)) + " ..."),
    ],
)
def test_a_model_the_server_does_not_list_is_named_with_up_to_ten_it_does(served: list[str], shown: str) -> None:
    with FakeServer(plan=lambda p, a: "404", models=served) as server:
        backend = OpenAIBackend("qwen-x", "EMPTY", [server.openai_url])
        error = refusal_of(backend)
    url = server.openai_url
    assert str(error) == f"model 'qwen-x' is not served at {url}/: it serves {shown} (HTTP 404: {NOT_FOUND})"
    assert error.fatal is True


def test_the_list_in_a_404_has_the_key_redacted() -> None:
    with FakeServer(plan=lambda p, a: "404", models=[f"echo-{KEY}"]) as server:
        error = refusal_of(OpenAIBackend("qwen-x", KEY, [server.openai_url]))
    assert KEY not in str(error) and "it serves 'echo-" in str(error)


@pytest.mark.parametrize("chat", [True, False])
def test_a_404_that_names_the_model_is_the_servers_own_words(chat: bool) -> None:
    with FakeServer(plan=lambda p, a: "404", models=["exist"]) as server:  # listed: the list explains nothing
        error = refusal_of(OpenAIBackend("exist", "EMPTY", [server.openai_url], chat=chat))
    assert str(error) == f"HTTP 404: {NOT_FOUND}" and error.fatal is True


def test_a_404_coded_model_not_found_is_the_servers_own_words() -> None:
    error = {"message": "No such deployment.", "type": "invalid_request_error", "code": "model_not_found"}
    with ErrorServer(404, error) as server:
        refused = refusal_of(OpenAIBackend("qwen-x", "EMPTY", [server.openai_url]))
    assert str(refused) == "HTTP 404: No such deployment." and refused.fatal is True


def test_a_404_for_raw_prompts_says_the_server_has_no_completions_endpoint() -> None:
    with FakeServer(plan=lambda p, a: "404") as server:  # no model list
        error = refusal_of(OpenAIBackend("qwen-x", "EMPTY", [server.openai_url], chat=False))
    assert str(error) == (
        f"HTTP 404 from {server.openai_url}/completions: this server has no /v1/completions, which raw text prompts "
        f"need; --chat sends each prompt as one chat message to /v1/chat/completions instead ({NOT_FOUND})"
    )
    assert error.fatal is True


def test_a_404_for_chat_asks_whether_the_base_url_is_right() -> None:
    with FakeServer(plan=lambda p, a: "404", models=["qwen-x"]) as server:
        error = refusal_of(OpenAIBackend("qwen-x", "EMPTY", [server.openai_url], chat=True))
    assert str(error) == (
        f"HTTP 404 from {server.openai_url}/chat/completions: is --base-url right? (an OpenAI-compatible server's "
        f"usually ends in /v1) ({NOT_FOUND})"
    )
    assert error.fatal is True


def test_a_404_from_the_url_of_openai_base_url_asks_about_the_variable_not_the_flag(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without --base-url the URL came from $OPENAI_BASE_URL (a shell profile's, forgotten): the question names it."""
    with FakeServer(plan=lambda p, a: "404", models=["qwen-x"]) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "EMPTY")
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_url)
        error = refusal_of(OpenAIBackend.from_config(RunConfig(model="qwen-x", chat=True), BACKENDS["openai"]))
    assert str(error) == (
        f"HTTP 404 from {server.openai_url}/chat/completions: is $OPENAI_BASE_URL right? (an OpenAI-compatible "
        f"server's usually ends in /v1) ({NOT_FOUND})"
    )


def test_another_status_is_not_explained_as_a_404() -> None:
    with FakeServer(plan=lambda p, a: "400", models=["a"]) as server:
        error = refusal_of(OpenAIBackend("qwen-x", "EMPTY", [server.openai_url]))
    assert str(error).startswith("bad_request: HTTP 400: This request is not valid") and error.fatal is False


# --- reading a reply -----------------------------------------------------------------------------------------------


def chat_reply(message: dict[str, Any], **choice: Any) -> dict[str, Any]:
    return {"choices": [{"message": message, **choice}], "model": "served-1"}


def read(data: Any, *, chat: bool = True, **options: Any) -> Completion:
    return OpenAIBackend("m", KEY, [SERVER], chat=chat, **options).completion_from("7", data)


def test_a_reply_through_the_sdk_is_read_whole() -> None:
    with FakeServer(served_model="served-1") as server:
        completion = send(OpenAIBackend("m", "EMPTY", [server.openai_url], chat=True), REQ)
    words = len(REQ.prompt.split())
    want = Completion(
        "7", default_answer(REQ.prompt), usage=Usage(words, 1), finish_reason="stop", served_model="served-1"
    )
    assert completion == want


def test_a_chat_reply_is_read_field_by_field() -> None:
    usage = {"prompt_tokens": 11, "completion_tokens": 70, "completion_tokens_details": {"reasoning_tokens": 64}}
    data = chat_reply({"content": "4.0", "reasoning_content": "a thought"}, finish_reason="stop") | {"usage": usage}
    want = Completion(
        "7", "4.0", usage=Usage(11, 70, 64), finish_reason="stop", served_model="served-1", reasoning="a thought"
    )
    assert read(data) == want


def test_a_raw_reply_is_read_from_its_text_and_reasoning() -> None:
    data = {"choices": [{"text": "3.5", "reasoning": "thought", "finish_reason": "length"}], "usage": {}}
    assert read(data, chat=False) == Completion(
        "7", "3.5", usage=Usage(0, 0, 0, reported=False), finish_reason="length", reasoning="thought"
    )


def test_only_the_first_choice_is_read() -> None:
    data = {"choices": [{"message": {"content": "1.0"}}, {"message": {"content": "5.0"}}]}
    assert read(data).text == "1.0"
    assert read({"choices": [{"message": {"content": "2.0"}}, "junk"]}).text == "2.0"


@pytest.mark.parametrize(
    ("usage", "want"),
    [
        ({"prompt_tokens": 5, "completion_tokens": 3}, Usage(5, 3, 0)),  # no details: no hidden reasoning
        ({"prompt_tokens": 5, "completion_tokens": 3, "completion_tokens_details": {"reasoning_tokens": None}},
         Usage(5, 3, 0)),
        ({"prompt_tokens": 5, "completion_tokens": 3, "completion_tokens_details": {"reasoning_tokens": 2}},
         Usage(5, 3, 2)),
        ({"prompt_tokens": 5}, Usage(5, 0, 0, reported=False)),
        ("junk", Usage(0, 0, 0, reported=False)),
    ],
)  # fmt: skip
def test_usage_and_hidden_reasoning_tokens(usage: Any, want: Usage) -> None:
    assert read(chat_reply({"content": "2"}) | {"usage": usage}).usage == want


@pytest.mark.parametrize(
    "data",
    [None, [], {"choices": None}, {"choices": []}, {"choices": {"0": {"text": "1"}}}, {"choices": ["1.0"]}],
)
def test_a_reply_without_a_choice_is_not_an_answer(data: Any) -> None:
    with pytest.raises(NotAnAnswer, match="^no choices$"):
        read(data)


@pytest.mark.parametrize("message", [None, "4.0", ["4.0"]])
def test_a_chat_choice_without_a_message_object_is_not_an_answer(message: Any) -> None:
    with pytest.raises(NotAnAnswer, match="^a choice without a message$"):
        read({"choices": [{"message": message, "text": "4.0"}]})


@pytest.mark.parametrize(
    ("data", "chat"),
    [
        (chat_reply({"content": 4}), True),
        (chat_reply({"content": "4", "refusal": 4}), True),
        (chat_reply({"content": None, "refusal": ["no"]}), True),
        ({"choices": [{"text": 4.0}]}, False),
    ],
)
def test_a_text_or_refusal_that_is_not_a_string_is_not_an_answer(data: Any, chat: bool) -> None:
    with pytest.raises(NotAnAnswer, match="^the text is not a string$"):
        read(data, chat=chat)


def test_a_refusal_is_an_answer_with_no_text_and_its_words_kept() -> None:
    completion = read(chat_reply({"content": "I can't", "refusal": "I won't"}, finish_reason="stop"))
    assert (completion.text, completion.refusal, completion.finish_reason) == ("", "I won't", "stop")
    assert read(chat_reply({"content": "3", "refusal": None})).refusal is None


@pytest.mark.parametrize(
    ("finish", "thought", "want"),
    [("length", None, ("", "length", None)), ("content_filter", None, ("", "content_filter", None)),
     ("stop", "thinking", ("", "stop", "thinking"))],
)  # fmt: skip
def test_no_text_is_an_empty_answer_when_cut_filtered_or_only_thought(
    finish: str, thought: str | None, want: tuple[str, str, str | None]
) -> None:
    completion = read(chat_reply({"content": None, "reasoning_content": thought}, finish_reason=finish))
    assert (completion.text, completion.finish_reason, completion.reasoning) == want


@pytest.mark.parametrize("finish", ["stop", None, 7])
def test_no_text_no_refusal_and_no_thought_is_malformed_and_retried(finish: object) -> None:
    with pytest.raises(MalformedReply) as err:
        read(chat_reply({"content": None}, finish_reason=finish))
    assert str(err.value) == f"malformed reply: no text and no refusal (finish_reason {finish!r})"


def test_a_finish_reason_that_is_not_a_string_is_dropped() -> None:
    assert read(chat_reply({"content": "2"}, finish_reason=["stop"])).finish_reason is None


@pytest.mark.parametrize(
    ("message", "want"),
    [
        ({"reasoning_content": "", "reasoning": "second"}, "second"),  # an empty first field: the second
        ({"reasoning_content": "first", "reasoning": "second"}, "first"),
        ({"reasoning_content": 5, "reasoning": None}, None),  # not a string: no thought
        ({}, None),
    ],
)
def test_the_thought_is_the_first_non_empty_reasoning_field(message: dict[str, Any], want: str | None) -> None:
    assert read(chat_reply({"content": "3", **message})).reasoning == want


def test_expected_scoring_reads_the_first_tokens_probabilities() -> None:
    logprobs = {"content": [{"token": "4", "logprob": -0.5, "top_logprobs": [{"token": "3", "logprob": -1.0}]}]}
    choice = {"message": {"content": "4"}, "logprobs": logprobs}
    got = read({"choices": [choice]}, expected=True).score_probs
    assert got == score_probs_from(choice, "4") and got is not None and set(got) == {"3", "4"}
    assert read({"choices": [choice]}).score_probs is None  # not asked for: not read


def test_the_key_is_redacted_from_the_text_and_the_served_model() -> None:
    completion = read(chat_reply({"content": f"3 {KEY}"}) | {"model": KEY})
    assert (completion.text, completion.served_model) == ("3 [redacted]", "[redacted]")
