"""harness/calling/backends/anthropic.py's own mirror: what each setting puts in the body (and so on the wire, through
the real anthropic SDK to tests/fake_server.py), what describe() records, and how every shape of Messages reply JSON
is read (`completion_from`, which the batch path calls too). Fast: no run_eval, one request a server."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.calling.backends.anthropic import TOOL_NAME, AnthropicBackend, constrain_fields
from harness.calling.backends.base import MalformedReply, NotAnAnswer
from harness.scoring.constrained import json_schema
from harness.types import Completion, HarnessError, Request, Usage
from tests.calling.test_backends_api import send
from tests.fake_server import FakeServer, default_answer

KEY = "sk-ant-test-secret-0123456789"
REQ = Request("7", "Sentence 1: a cat.\nSentence 2: a dog.\nOutput:", max_tokens=9)
SERVER = "http://127.0.0.1:9"  # never reached: these backends only build bodies or read replies
SCALE = (1, 2, 3, 4, 5)
GREEDY = "2023-06-01"


# --- setup ---------------------------------------------------------------------------------------------------------


def test_no_chat_is_refused_in_words() -> None:
    with pytest.raises(HarnessError) as err:
        AnthropicBackend("claude-x", KEY, chat=False)
    assert str(err.value) == "--no-chat: Anthropic models are chat-only ('claude-x'): the Messages API takes messages"


@pytest.mark.parametrize("chat", [None, True])
def test_chat_or_its_default_is_accepted(chat: bool | None) -> None:
    assert AnthropicBackend("claude-x", KEY, [SERVER], chat=chat).describe()["chat"] is True


def test_the_sdks_own_retries_are_off() -> None:
    """Dispatch retries (attempts.py); the SDK retrying too would multiply the tries and the bill."""
    assert AnthropicBackend("claude-x", KEY).clients[0].max_retries == 0


# --- the request body, on the wire, and its record ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "fields"),
    [
        ({}, {"max_tokens": 9}),
        ({"anthropic_greedy": True}, {"max_tokens": 9, "temperature": 0.0}),
        ({"stop": ["\n", "END"]}, {"max_tokens": 9, "stop_sequences": ["\n", "END"]}),
        ({"reasoning": True, "reasoning_tokens": 1024},
         {"max_tokens": 1033, "thinking": {"type": "enabled", "budget_tokens": 1024}}),
        ({"reasoning": False, "reasoning_tokens": 1024}, {"max_tokens": 9}),
        ({"constrain": SCALE}, {"max_tokens": 9, **constrain_fields(SCALE)}),
    ],
)  # fmt: skip
def test_each_setting_puts_its_fields_in_the_body_and_on_the_wire(options: dict[str, Any], fields: dict) -> None:
    with FakeServer() as server:
        backend = AnthropicBackend("claude-x", KEY, [server.anthropic_url], **options)
        send(backend, REQ)
    want = {"model": "claude-x", "messages": [{"role": "user", "content": REQ.prompt}], **fields}
    (call,) = server.calls
    assert backend.body(REQ) == want and call.body == want and call.path == "/v1/messages"
    # describe() records the API version the requests were sent with and the body but its model and prompt
    record = backend.describe()
    assert record["api_version"] == call.headers["anthropic-version"]
    assert record["sent"] == {**fields, "max_tokens": fields["max_tokens"] - 9 + 20}


def test_the_forced_tool_takes_only_the_score_on_the_scale() -> None:
    tool = {"name": TOOL_NAME, "description": "Record the similarity score.", "input_schema": json_schema(SCALE)}
    assert constrain_fields(SCALE) == {"tools": [tool], "tool_choice": {"type": "tool", "name": "record_similarity"}}


def test_greedy_pins_the_old_api_version_and_is_recorded_deterministic() -> None:
    greedy, sampled = AnthropicBackend("claude-x", KEY, anthropic_greedy=True), AnthropicBackend("claude-x", KEY)
    assert greedy.clients[0].default_headers["anthropic-version"] == GREEDY
    assert sampled.clients[0].default_headers["anthropic-version"] != GREEDY
    on, off = greedy.describe(), sampled.describe()
    assert (on["api_version"], on["deterministic"], off["deterministic"]) == (GREEDY, True, False)
    assert on["decoding"] == "greedy: temperature 0 on API version 2023-06-01 (--anthropic-greedy)"
    assert str(off["decoding"]).startswith("the model's default sampling")


def test_a_plain_runs_record_has_no_thinking_and_a_thinking_runs_says_its_budget() -> None:
    plain = AnthropicBackend("claude-x", KEY, [SERVER]).describe()
    assert plain == {
        "api": "messages", "endpoint": "/v1/messages", "chat": True, "base_urls": [SERVER],
        "messages": "one user message holding the rendered prompt", "api_version": plain["api_version"],
        "sent": {"max_tokens": 20}, "deterministic": False, "decoding": plain["decoding"],
    }  # fmt: skip
    thinking = AnthropicBackend("claude-x", KEY, [SERVER], reasoning=True, reasoning_tokens=2000).describe()
    assert thinking["reasoning_model"] is True and thinking["note"] == (
        "extended thinking: up to 2000 thinking tokens (billed as output) before the answer's; "
        "the paper's 20-token budget is not applicable"
    )


# --- reading a reply -----------------------------------------------------------------------------------------------


def reply(*content: Any, stop: Any = "end_turn", **extra: Any) -> dict[str, Any]:
    return {"content": list(content), "stop_reason": stop, "model": "claude-served"} | extra


def text(t: Any) -> dict[str, Any]:
    return {"type": "text", "text": t}


def read(data: Any, **options: Any) -> Completion:
    return AnthropicBackend("claude-x", KEY, [SERVER], **options).completion_from("7", data)


def test_a_reply_through_the_sdk_is_read_whole() -> None:
    with FakeServer(served_model="claude-served") as server:
        completion = send(AnthropicBackend("claude-x", KEY, [server.anthropic_url]), REQ)
    words = len(REQ.prompt.split())
    want = Completion(
        "7", default_answer(REQ.prompt), usage=Usage(words, 1), finish_reason="stop", served_model="claude-served"
    )
    assert completion == want


def test_a_reply_is_read_field_by_field() -> None:
    usage = {"input_tokens": 12, "output_tokens": 40, "output_tokens_details": {"thinking_tokens": 30}}
    data = reply({"type": "thinking", "thinking": "hmm"}, text("3."), {"type": "other"}, text("5"), usage=usage)
    want = Completion(
        "7", "3.5", usage=Usage(12, 40, 30), finish_reason="stop", served_model="claude-served", reasoning="hmm"
    )
    assert read(data) == want


@pytest.mark.parametrize(
    ("usage", "want"),
    [
        ({"input_tokens": 5, "output_tokens": 3}, Usage(5, 3, 0)),
        ({"input_tokens": 5, "output_tokens": 3, "output_tokens_details": {"thinking_tokens": 2}}, Usage(5, 3, 2)),
        ({"input_tokens": 5}, Usage(5, 0, 0, reported=False)),
        ("junk", Usage(0, 0, 0, reported=False)),
    ],
)
def test_usage_and_thinking_tokens(usage: Any, want: Usage) -> None:
    assert read(reply(text("2"), usage=usage)).usage == want


@pytest.mark.parametrize(
    ("stop", "want"),
    [("end_turn", "stop"), ("stop_sequence", "stop"), ("max_tokens", "length"), ("pause_turn", "pause_turn"),
     (None, None), ("", None), (7, None)],
)  # fmt: skip
def test_stop_reasons_are_recorded_in_openais_words(stop: Any, want: str | None) -> None:
    assert read(reply(text("2"), stop=stop)).finish_reason == want


def test_a_refusal_is_an_answer_with_no_text_and_its_words_kept() -> None:
    said = read(reply(text("I can't help with that."), stop="refusal"))
    assert (said.text, said.refusal, said.finish_reason) == ("", "I can't help with that.", "refusal")
    silent = read(reply(stop="refusal"))
    assert (silent.text, silent.refusal) == ("", "stop_reason: refusal")
    assert read(reply(text("2"))).refusal is None


@pytest.mark.parametrize("data", [None, ["content"], "content", {"type": "message"}])
def test_a_reply_without_content_is_not_an_answer(data: Any) -> None:
    with pytest.raises(NotAnAnswer, match="^no content$"):
        read(data)


def test_content_null_is_malformed_and_retried() -> None:
    with pytest.raises(MalformedReply, match="^malformed reply: content null$"):
        read({"content": None})


@pytest.mark.parametrize("content", ["3", {"type": "text", "text": "3"}, 3])
def test_content_that_is_not_a_list_is_not_an_answer(content: Any) -> None:
    with pytest.raises(NotAnAnswer, match="^content is not a list$"):
        read({"content": content})


@pytest.mark.parametrize("block", [text(None), text(3), {"type": "text"}])
def test_a_text_block_without_text_is_not_an_answer(block: dict[str, Any]) -> None:
    with pytest.raises(NotAnAnswer, match="^a text block without text$"):
        read(reply(text("1"), block))


def test_only_text_blocks_make_the_text() -> None:
    data = reply("3", {"type": "tool_use", "text": "9"}, {"text": "8"}, text("4"), {"type": "thinking", "text": "7"})
    completion = read(data)
    assert (completion.text, completion.reasoning) == ("4", None)


@pytest.mark.parametrize(
    ("blocks", "want"),
    [
        ([{"type": "thinking", "thinking": "a"}, {"type": "redacted_thinking", "data": "x"},
          {"type": "thinking", "thinking": "b"}], "a\n\n[redacted thinking]\n\nb"),
        ([{"type": "thinking", "thinking": 5}, {"type": "thinking"}, {"type": "Thinking", "thinking": "no"}], None),
        (["thinking", {"type": "redacted_thinking"}], "[redacted thinking]"),
        ([{"type": "signature", "thinking": "no"}], None),
    ],
)  # fmt: skip
def test_the_thought_is_the_thinking_blocks_and_a_mark_per_redacted_one(blocks: list[Any], want: str | None) -> None:
    assert read(reply(*blocks, text("2"))).reasoning == want


@pytest.mark.parametrize(
    ("blocks", "want"),
    [
        ([text("no"), {"type": "tool_use", "name": TOOL_NAME, "input": {"score": 4, "a": 1}}], '{"a": 1, "score": 4}'),
        ([{"type": "tool_use", "name": "other", "input": {"score": 1}},
          {"type": "tool_use", "name": TOOL_NAME, "input": {"score": 2}}], '{"score": 2}'),
        ([{"type": "text", "name": TOOL_NAME, "input": {"score": 1}, "text": "3"}], "3"),
        (["tool_use", text("5")], "5"),
        ([{"type": "tool_use", "name": "other", "input": {"score": 1}}, text("4")], "4"),
    ],
)  # fmt: skip
def test_constrained_the_text_is_the_forced_tools_input(blocks: list[Any], want: str) -> None:
    assert read(reply(*blocks), constrain=SCALE).text == want
    if want.startswith("{"):
        assert json.loads(want) == next(b["input"] for b in blocks if b.get("name") == TOOL_NAME)


def test_unconstrained_a_tool_call_is_not_the_text() -> None:
    blocks = [text("3"), {"type": "tool_use", "name": TOOL_NAME, "input": {"score": 4}}]
    assert read(reply(*blocks)).text == "3"


def test_the_key_is_redacted_from_the_text_and_the_served_model() -> None:
    completion = read(reply(text(f"3 {KEY}"), model=KEY))
    assert (completion.text, completion.served_model) == ("3 [redacted]", "[redacted]")
