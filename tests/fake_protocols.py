"""Reply extras for tests/fake_server.py (its `extras` hook): log-probabilities and forced tool calls, in the
providers' wire shapes, added only when the request asks for them, as the real APIs do.

- Chat Completions (`logprobs: true, top_logprobs: N`): `choice.logprobs.content[0]` with the chosen token and
  its top N alternatives, `[{token, logprob, bytes}]`.
- Completions (`logprobs: N`): the legacy shape, `choice.logprobs.top_logprobs[0] = {token: logprob}` beside
  `tokens` and `token_logprobs`; or, with `raw_shape="chat"`, the chat shape, as llama.cpp's own server answers.
- Messages with `tool_choice` naming a tool: one `tool_use` block whose input is `tool_input(text)`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

Extras = Callable[[str, dict[str, Any], dict[str, Any]], dict[str, Any]]


def _entry(token: str, p: float) -> dict[str, Any]:
    return {"token": token, "logprob": math.log(p) if p > 0 else -math.inf, "bytes": list(token.encode())}


def logprobs(first: Callable[[str], dict[str, float]], raw_shape: str = "legacy") -> Extras:
    """First-position alternatives {token: probability} from the reply text; the chosen token is the text."""

    def add(endpoint: str, request: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
        asked = request.get("logprobs")
        if not asked or endpoint.endswith("/messages"):
            return reply  # not asked: a server leaves the field null, as the plain reply already has it
        choice = reply["choices"][0]
        text = choice.get("text") if "text" in choice else choice["message"]["content"]
        chat = endpoint.endswith("/chat/completions")
        n = request.get("top_logprobs", 0) if chat else int(asked)
        ranked = sorted(first(text or "").items(), key=lambda kv: -kv[1])[:n]
        chosen = _entry(text or "", dict(ranked).get(text or "", 0.5))
        if chat or raw_shape == "chat":
            choice["logprobs"] = {"content": [chosen | {"top_logprobs": [_entry(t, p) for t, p in ranked]}]}
        else:
            choice["logprobs"] = {
                "tokens": [chosen["token"]],
                "token_logprobs": [chosen["logprob"]],
                "top_logprobs": [{t: _entry(t, p)["logprob"] for t, p in ranked}],
                "text_offset": [0],
            }
        return reply

    return add


def tool_call(tool_input: Callable[[str], dict[str, Any]]) -> Extras:
    """Messages replies to a request with a forced tool: one tool_use block (the text blocks dropped)."""

    def add(endpoint: str, request: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
        forced = request.get("tool_choice")
        if not endpoint.endswith("/messages") or not forced:
            return reply
        text = "".join(b.get("text", "") for b in reply.get("content") or [])
        block = {"type": "tool_use", "id": "toolu_fake", "name": forced["name"], "input": tool_input(text)}
        return reply | {"content": [block], "stop_reason": "tool_use"}

    return add
