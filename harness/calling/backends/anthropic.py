"""Anthropic Messages API via AsyncAnthropic.

The installed SDK (anthropic 2.x) sends API version 2026-10-21 and has no `temperature`, `top_p` or
`top_k` in `messages.create`: under that version any sampling parameter is a 400 on every model. So by
default we send none and the model samples at its default: decoding is NOT deterministic, and
describe() says so. `--anthropic-greedy` asks for greedy decoding the one way still supported: pin the
request to API version 2023-06-01 and send `temperature: 0` in the body (beside the SDK's typed call). Models that no
longer accept sampling parameters at all (Opus 4.7 and later, generation-5 models) answer that with a
400, and the run stops with their message. The Messages API is chat-only: `--no-chat` is refused.
Stop reasons are recorded in OpenAI's words (end_turn, stop_sequence -> stop; max_tokens -> length).
`--constrain` forces a call of one tool whose only input is the score, an integer of the scale (`tool_choice`);
the reply's text is then that input as JSON, `{"score": 4}` (harness/scoring/constrained.py).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import anthropic
import httpx2
from anthropic import AsyncAnthropic

from harness.calling.backends.base import MalformedReply, NotAnAnswer, reply_usage, usage_count
from harness.calling.backends.provider import HTTPBackend
from harness.calling.backends.thinking import thinking_for
from harness.scoring.constrained import json_schema
from harness.types import Completion, HarnessError, RateLimit, Request

LEGACY_API_VERSION = "2023-06-01"  # the last API version that accepts temperature
ENDPOINT = "/v1/messages"
_FINISH = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length"}
TOOL_NAME = "record_similarity"  # --constrain: the one tool the model must call


def constrain_fields(values: tuple[int, ...]) -> dict[str, Any]:
    """--constrain: one tool whose input is the score, and `tool_choice` forcing the model to call it."""
    tool = {"name": TOOL_NAME, "description": "Record the similarity score.", "input_schema": json_schema(values)}
    return {"tools": [tool], "tool_choice": {"type": "tool", "name": TOOL_NAME}}


class AnthropicBackend(HTTPBackend):
    """Messages API; one AsyncAnthropic client per base URL, SDK retries off (dispatch retries)."""

    name = "anthropic"
    endpoint = ENDPOINT
    sdk = anthropic
    thinking_rule = "when-asked"  # extended thinking, only when asked

    def setup(self) -> None:
        if self.decoding.chat is False:
            raise HarnessError(
                f"--no-chat: Anthropic models are chat-only ({self.model!r}): the Messages API takes messages"
            )
        api = self.api
        self.greedy = api.anthropic_greedy
        self.thinking = thinking_for(self.thinking_rule, self.model, api.reasoning, api.reasoning_tokens, True)
        self.constrain = self.decoding.constrain  # --constrain: the scale's integers, the forced tool's only input

    def client(self, api_key: str, url: str | None, http: httpx2.AsyncClient) -> AsyncAnthropic:
        headers = {"anthropic-version": LEGACY_API_VERSION} if self.greedy else None
        return AsyncAnthropic(
            api_key=api_key, base_url=url, max_retries=0, timeout=self.api.timeout, default_headers=headers,
            http_client=http,
        )  # fmt: skip

    def body(self, request: Request) -> dict[str, Any]:
        """The exact JSON body sent to `endpoint`: `send` posts it, the batch path (harness/batch) submits it as
        a request's `params`. Temperature only in greedy mode (the SDK's create() has no argument for it)."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "user", "content": request.prompt}],
            "max_tokens": self.thinking.max_tokens(request.max_tokens),
        }
        if self.thinking.on:  # extended thinking: its budget, then the answer's tokens, within max_tokens
            body["thinking"] = {"type": "enabled", "budget_tokens": self.thinking.budget}
        if self.greedy:
            body["temperature"] = request.temperature
        if self.stop:
            body["stop_sequences"] = list(self.stop)
        if self.constrain is not None:
            body |= constrain_fields(self.constrain)
        return body

    def describe(self) -> dict[str, object]:
        body = self.body(Request("", "", max_tokens=self.max_tokens))
        sent = {k: v for k, v in body.items() if k not in ("model", "messages")}
        thinking: dict[str, object] = {}
        if self.thinking.on:  # recorded only when on: a plain run's record (and cache key) stays as it was
            thinking = {
                "reasoning_model": True,
                "note": f"extended thinking: up to {self.thinking.budget} thinking tokens (billed as output) "
                "before the answer's; the paper's 20-token budget is not applicable",
            }
        return thinking | {
            "api": "messages",
            "endpoint": self.endpoint,
            "chat": True,
            "base_urls": sorted(self.base_urls),
            "messages": "one user message holding the rendered prompt",
            "api_version": self.clients[0].default_headers.get("anthropic-version"),
            "sent": sent,
            "deterministic": self.greedy,
            "decoding": (
                "greedy: temperature 0 on API version 2023-06-01 (--anthropic-greedy)"
                if self.greedy
                else "the model's default sampling: this SDK's API version rejects temperature "
                "(pass --anthropic-greedy for temperature 0 where the model still allows it)"
            ),
        }

    def sdk_call(self, body: dict[str, Any]) -> Callable[[AsyncAnthropic], Awaitable[Any]]:
        """The SDK's own typed call for this body, run once per base URL by transport.py `capture`.
        This SDK's messages.create has no temperature argument: it is left out of the call, and Template.encode
        sends it last, where the SDK's extra_body would (tests/calling/test_transport_lean.py compares the bytes)."""
        fields = {k: v for k, v in body.items() if k != "temperature"}
        return lambda c: c.messages.create(**fields)

    def completion_from(self, request_id: str, data: Any, limits: RateLimit | None = None) -> Completion:
        """A Messages reply's JSON as a Completion, whether it came one by one or in a batch's results."""
        if not isinstance(data, dict) or "content" not in data:
            raise NotAnAnswer("no content")
        content = data["content"]
        if content is None:  # as OpenAI's content null without a refusal: retried (docs/backends.md)
            raise MalformedReply("malformed reply: content null")
        if not isinstance(content, list):
            raise NotAnAnswer("content is not a list")
        parts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        if not all(isinstance(t, str) for t in parts):
            raise NotAnAnswer("a text block without text")
        text = "".join(parts)  # type: ignore[arg-type]
        thought = thinking_of(content)
        if self.constrain is not None:
            text = _tool_input(content, text)
        stop = data.get("stop_reason")
        stop = stop if isinstance(stop, str) else None
        refusal = None
        if stop == "refusal":  # the model declined: an answer (scored invalid), its words kept
            refusal, text = text or "stop_reason: refusal", ""
        usage = data.get("usage")
        details = usage.get("output_tokens_details") if isinstance(usage, dict) else None
        tokens = reply_usage(usage, "input_tokens", "output_tokens", usage_count(details, "thinking_tokens"))
        finish = _FINISH.get(stop, stop) if stop else None
        return self.answer(request_id, text, tokens, finish, data.get("model"), limits, refusal, thought)


def thinking_of(content: list[Any]) -> str | None:
    """The thought of a reply with extended thinking: its `thinking` blocks' text, and a mark for each
    `redacted_thinking` block (encrypted, unreadable); None where there are none."""
    parts = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "thinking" and isinstance(block.get("thinking"), str):
            parts.append(block["thinking"])
        elif isinstance(block, dict) and block.get("type") == "redacted_thinking":
            parts.append("[redacted thinking]")
    return "\n\n".join(parts) if parts else None


def _tool_input(content: list[Any], text: str) -> str:
    """--constrain: the forced tool call's input as JSON; the text blocks when the reply holds no such call
    (then scored invalid unless they are a bare score)."""
    for block in content:
        if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("name") == TOOL_NAME:
            return json.dumps(block.get("input"), sort_keys=True)
    return text


from_config = AnthropicBackend.from_config  # what harness/calling/backends BACKENDS calls
