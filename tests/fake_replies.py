"""What tests/fake_server.py answers: reply bodies in the OpenAI and Anthropic wire formats, and its faults.

Pure functions of the action, the prompt and the request body, so the server module keeps only the HTTP
machinery. Wire formats as the providers document them (and as the real SDKs parse them).
"""

from __future__ import annotations

import base64
import hashlib
import urllib.parse
from typing import Any

from aiohttp import web

REFUSAL = "I'm sorry, but I can't help with that request."
RETRY_AFTER_MS = 20
SLOW_SECONDS = 0.5
HUGE_BYTES = 2_000_000
# A thought with numbers in it, as reasoning models write them: the first-number rule must never read these.
THOUGHT = "Sentence 1 mentions 2 dogs and sentence 2 mentions 7; the condition asks about the animals."
HIDDEN_TOKENS = 64  # OpenAI's reasoning_tokens for the "hidden" actions
# Reasoning actions: the thought apart (a server's reasoning_content / reasoning, Anthropic's thinking blocks),
# inline in the text (<think>), or hidden (OpenAI's reasoning_tokens); "-cut": the budget ran out while thinking.
THINKING_ACTIONS = ("think", "think-cut", "think-vllm", "think-inline", "think-inline-cut", "hidden", "hidden-cut")
CONTEXT_MESSAGE = {
    False: "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens. "
    "Please reduce the length of the messages.",
    True: "prompt is too long: 210000 tokens > 200000 maximum",
}
PARAM_MESSAGE = {
    False: "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
    True: "max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens for this model",
}


def default_answer(prompt: str) -> str:
    """A deterministic score in [1.0, 5.0] from the prompt, phrased as a model might."""
    h = int(hashlib.sha256(prompt.encode()).hexdigest(), 16)
    return f"{1 + (h % 41) / 10:.1f}"


def bag_of_words(text: str, dims: int = 32) -> list[float]:
    """A deterministic embedding: hashed word counts, so answers sharing words point the same way."""
    vector = [0.0] * dims
    for word in text.lower().split():
        vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % dims] += 1.0
    return vector


# 200 replies that hold no answer: a gateway's error report (OpenRouter's shape: once the model has started, the
# status it stands for in error.code), one without a status, one naming a 4xx, a list, an object without choices.
GATEWAY_200: dict[str, Any] = {
    "200-error-502": {"error": {"code": 502, "message": "Upstream provider is down"}},
    "200-error-400": {"error": {"code": 400, "message": "Provider rejected the request"}},
    "200-error": {"error": {"message": "Overloaded", "type": "server_error"}},
    "200-list": [{"generated_text": "3.0"}],
    "200-no-choices": {"id": "x", "object": "chat.completion", "usage": {"prompt_tokens": 9, "completion_tokens": 0}},
}


def fault(action: str, key: str, anthropic: bool, prompt: str = "") -> web.Response | None:
    """The error or unreadable reply an action asks for; None for actions that answer."""
    kinds = {
        "404": (404, "not_found_error", "The model does not exist or you do not have access to it."),
        # A validation error quoting what it was sent, as pydantic's `input` does (vLLM's 400s).
        "400-quote": (400, "invalid_request_error", f"Input should be a valid list: input_value={prompt!r}"),
        "429": (429, "rate_limit_error", "Rate limit reached; slow down."),
        "500": (500, "api_error", "Internal server error."),
        "529": (529, "overloaded_error", "Overloaded."),
        "400": (400, "invalid_request_error", "This request is not valid for this model."),
        "400-context": (400, "invalid_request_error", CONTEXT_MESSAGE[anthropic]),
        "400-param": (400, "invalid_request_error", PARAM_MESSAGE[anthropic]),
        "401": (401, "authentication_error", f"Incorrect API key provided: {key}."),
        "400-echo": (400, "invalid_request_error", key_forms(key)[0]),  # the key encoded, and half of it
    }
    if action == "malformed":
        return web.Response(status=200, text='{"id": "x", "choices": [', content_type="application/json")
    if action in GATEWAY_200:
        return web.json_response(GATEWAY_200[action], status=200)
    if action == "utf8":
        body = b'{"id": "x", "object": "chat.completion", "choices": [{"text": "\xff\xfe 3.0"}]}'
        return web.Response(status=200, body=body, content_type="application/json")
    if action not in kinds:
        return None
    status, kind, message = kinds[action]
    headers = {"retry-after": "1", "retry-after-ms": str(RETRY_AFTER_MS)} if status == 429 else {}
    error = {"type": kind, "message": message}
    code = {"400-context": "context_length_exceeded", "400-param": "unsupported_parameter"}.get(action)
    code = key_forms(key)[1] if action == "400-echo" else code  # the key's second half in a field of its own
    param = {"400-context": "messages", "400-param": "max_tokens"}.get(action)
    body = {"type": "error", "error": error} if anthropic else {"error": error | {"code": code, "param": param}}
    return web.json_response(body, status=status, headers=headers)


def key_forms(key: str) -> tuple[str, str]:
    """A message echoing `key` in each form a server or proxy may write it (URL-encoded, base64 alone, as
    `Bearer <key>` and as basic auth's `user:key`), ending in its first half; and its second half (another field)."""

    def b64(text: str) -> str:
        return base64.b64encode(text.encode()).decode()

    half = len(key) // 2
    said = f"got {urllib.parse.quote(key, safe='')} ({b64(key)}; {b64('Bearer ' + key)}; Basic {b64('me:' + key)})"
    return f"{said}, key begins {key[:half]}", key[half:]


def reply_text(action: str, answer: str, key: str) -> str | None:
    """The text an answering action returns (None: no content at all)."""
    match action:
        case "empty":
            return ""
        case "null" | "refusal":
            return None
        case "huge":
            return "4.0 " + "x" * HUGE_BYTES
        case "leak":
            return f"3.0 (your key is {key})"
        case "think-inline":
            return f"<think>\n{THOUGHT}\n</think>\n\n{answer}"
        case "think-inline-cut":
            return f"<think>\n{THOUGHT}"
        case "think-cut" | "hidden-cut":
            return None  # vLLM and OpenAI send content null when the budget ran out before any answer
    return answer


def _usage(tokens_in: int, tokens_out: int, action: str = "") -> dict[str, Any]:
    usage: dict[str, Any] = {"prompt_tokens": tokens_in, "completion_tokens": tokens_out}
    usage["total_tokens"] = tokens_in + tokens_out
    if action in ("hidden", "hidden-cut"):  # OpenAI: reasoning billed as output, counted apart
        usage["completion_tokens"] += HIDDEN_TOKENS
        usage["total_tokens"] += HIDDEN_TOKENS
        usage["completion_tokens_details"] = {"reasoning_tokens": HIDDEN_TOKENS}
    return usage


def _finish(action: str) -> str:
    return "length" if action in ("length", "think-cut", "think-inline-cut", "hidden-cut") else "stop"


def chat_reply(model: str, text: str | None, action: str, usage: tuple[int, int]) -> dict[str, Any]:
    message = {"role": "assistant", "content": text, "refusal": REFUSAL if action == "refusal" else None}
    if action in ("think", "think-cut"):  # SGLang, llama.cpp's server, vLLM before 0.11: reasoning_content
        message["reasoning_content"] = THOUGHT
    elif action == "think-vllm":  # vLLM since 0.11: `reasoning`
        message["reasoning"] = THOUGHT
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": _finish(action)}],
        "usage": _usage(*usage, action),
    }


def raw_reply(model: str, text: str | None, action: str, usage: tuple[int, int]) -> dict[str, Any]:
    return {
        "id": "cmpl-fake",
        "object": "text_completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "text": text, "logprobs": None, "finish_reason": _finish(action)}],
        "usage": _usage(*usage),
    }


_STOP = {"refusal": "refusal"}


def anthropic_reply(model: str, text: str | None, action: str, usage: tuple[int, int]) -> dict[str, Any]:
    answer = [{"type": "text", "text": text}] if text else []
    content: list[dict[str, Any]] | None = None if action == "null" else answer
    tokens: dict[str, Any] = {"input_tokens": usage[0], "output_tokens": usage[1]}
    if action in ("think", "think-cut") and content is not None:  # extended thinking: blocks before the answer
        thinking = [{"type": "thinking", "thinking": THOUGHT, "signature": "EqQBCgIYAhIM"}]
        thinking.append({"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"})
        content = thinking + ([] if action == "think-cut" else content)
        thought = len(THOUGHT.split())
        tokens = {"input_tokens": usage[0], "output_tokens": usage[1] + thought}
        tokens["output_tokens_details"] = {"thinking_tokens": thought}
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "max_tokens" if _finish(action) == "length" else _STOP.get(action, "end_turn"),
        "stop_sequence": None,
        "usage": tokens,
    }


def embeddings_reply(model: str, texts: list[str]) -> dict[str, Any]:
    data = [{"object": "embedding", "index": i, "embedding": bag_of_words(t)} for i, t in enumerate(texts)]
    tokens = sum(len(t.split()) for t in texts)
    return {"object": "list", "data": data, "model": model, "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}


def models_list(models: list[str]) -> dict[str, Any]:
    return {"object": "list", "data": [{"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in models]}
