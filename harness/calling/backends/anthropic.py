"""Anthropic Messages API via AsyncAnthropic.

The installed SDK (anthropic 2.x) sends API version 2026-10-21 and has no `temperature`, `top_p` or
`top_k` in `messages.create`: under that version any sampling parameter is a 400 on every model. So by
default we send none and the model samples at its default: decoding is NOT deterministic, and
describe() says so. `--anthropic-greedy` asks for greedy decoding the one way still supported: pin the
request to API version 2023-06-01 and send `temperature: 0` in the body (extra_body). Models that no
longer accept sampling parameters at all (Opus 4.7 and later, generation-5 models) answer that with a
400, and the run stops with their message. The Messages API is chat-only: `--no-chat` is refused.
Stop reasons are recorded in OpenAI's words (end_turn, stop_sequence -> stop; max_tokens -> length).
`--constrain` forces a call of one tool whose only input is the score, an integer of the scale (`tool_choice`);
the reply's text is then that input as JSON, `{"score": 4}` (harness/scoring/constrained.py).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any

import anthropic
from anthropic import AsyncAnthropic

from harness.calling.backends import backend_key, constrain_scale
from harness.calling.backends.base import (
    ClientPool,
    MalformedReply,
    RemoteBackend,
    clean_reply,
    status_error,
    unencodable_prompt,
    usage_count,
)
from harness.calling.backends.http import ErrorReply, open_routes, reply_error, route_secrets, sdk_connection_error
from harness.calling.backends.reading import read_reply
from harness.calling.backends.thinking import thinking_for
from harness.calling.backends.transport import MAX_REPLY_MB
from harness.calling.redaction import Secrets, redact, redact_completion
from harness.config.settings import RunConfig
from harness.scoring.constrained import json_schema
from harness.types import Completion, HarnessError, RateLimit, Request, Usage

LEGACY_API_VERSION = "2023-06-01"  # the last API version that accepts temperature
ENDPOINT = "/v1/messages"
_FINISH = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length"}
TOOL_NAME = "record_similarity"  # --constrain: the one tool the model must call


def from_config(config: RunConfig) -> AnthropicBackend:
    """The run's model at Anthropic or at --base-url."""
    api = config.api
    return AnthropicBackend(
        config.model,
        backend_key("anthropic", api.base_urls),
        api.base_urls,
        timeout=api.timeout,
        max_reply_mb=api.max_reply_mb,
        greedy=api.anthropic_greedy,
        chat=config.chat,
        stop=config.stop,
        max_tokens=config.max_tokens,
        reasoning=api.reasoning,
        reasoning_tokens=api.reasoning_tokens,
        constrain=constrain_scale(config),
    )


def constrain_fields(values: tuple[int, ...]) -> dict[str, Any]:
    """--constrain: one tool whose input is the score, and `tool_choice` forcing the model to call it."""
    tool = {"name": TOOL_NAME, "description": "Record the similarity score.", "input_schema": json_schema(values)}
    return {"tools": [tool], "tool_choice": {"type": "tool", "name": TOOL_NAME}}


class AnthropicBackend(RemoteBackend):
    """Messages API; one AsyncAnthropic client per base URL, SDK retries off (dispatch retries)."""

    name = "anthropic"
    endpoint = ENDPOINT

    def __init__(
        self,
        model: str,
        api_key: str,
        base_urls: Sequence[str] = (),
        timeout: float = 120.0,
        max_reply_mb: float = MAX_REPLY_MB,
        greedy: bool = False,
        chat: bool | None = None,
        stop: Sequence[str] = (),
        max_tokens: int = 20,
        reasoning: bool | None = None,
        reasoning_tokens: int = 2048,
        constrain: tuple[int, ...] | None = None,
    ) -> None:
        if chat is False:
            raise HarnessError(
                f"--no-chat: Anthropic models are chat-only ({model!r}): the Messages API takes messages"
            )
        self.model = model
        self._key = api_key
        self.greedy = greedy
        self.chat = True
        self.stop = list(stop)
        self.max_tokens = max_tokens  # what describe() records; each Request carries its own
        self.thinking = thinking_for("anthropic", model, reasoning, reasoning_tokens, True)  # only when asked
        self.constrain = constrain  # --constrain: the scale's integers, the forced tool's only input
        headers = {"anthropic-version": LEGACY_API_VERSION} if greedy else None
        urls: Sequence[str | None] = list(base_urls) or [None]
        self.routes = open_routes(  # the SDK client and the aiohttp session per base URL (calling/backends/http.py)
            urls,
            timeout,
            lambda url, http: AsyncAnthropic(
                api_key=api_key, base_url=url, max_retries=0, timeout=timeout, default_headers=headers,
                http_client=http,
            ),
            max_reply_mb,
        )  # fmt: skip
        self.clients = [r.client for r in self.routes]
        self.base_urls = [str(c.base_url) for c in self.clients]
        self.pool = ClientPool(self.routes)
        self.secrets = route_secrets(api_key, self.routes)  # never stored or printed (calling/redaction.py)

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

    def output_budget(self, request: Request) -> int:
        return self.thinking.max_tokens(request.max_tokens)

    async def send(self, request: Request) -> Completion:
        body = self.body(request)
        with self.pool.lease() as route, sdk_errors(self.secrets, body):
            reply = await route.call(body, self._capture_call(body))
        return read_reply(request.id, reply, self.secrets, lambda d: self.completion_from(request.id, d, reply.limits))

    @staticmethod
    def _capture_call(body: dict[str, Any]) -> Callable[[AsyncAnthropic], Awaitable[Any]]:
        """The SDK's own typed call for this body, run once per base URL by http.capture.
        This SDK's messages.create has no temperature argument: it travels in extra_body, and so goes last."""
        fields = {k: v for k, v in body.items() if k != "temperature"}
        extra = {"temperature": body["temperature"]} if "temperature" in body else None
        return lambda c: c.messages.create(**fields, extra_body=extra)

    def completion_from(self, request_id: str, data: Any, limits: RateLimit | None = None) -> Completion:
        """A Messages reply's JSON as a Completion, whether it came one by one or in a batch's results."""
        content = data.get("content") if isinstance(data, dict) else None
        if not isinstance(content, list):
            raise MalformedReply("malformed reply: no content")
        parts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        if not all(isinstance(t, str) for t in parts):
            raise MalformedReply("malformed reply: a text block without text")
        text = "".join(parts)  # type: ignore[arg-type]
        thought = thinking_of(content)
        if self.constrain is not None:
            text = _tool_input(content, text)
        stop = data.get("stop_reason")
        stop = stop if isinstance(stop, str) else None
        refusal = None
        if stop == "refusal":  # the model declined: an answer (scored invalid), its words kept
            refusal, text = clean_reply(text or "stop_reason: refusal", self.secrets)[0], ""
        text, truncated = clean_reply(text, self.secrets)
        usage = data.get("usage")
        details = usage.get("output_tokens_details") if isinstance(usage, dict) else None
        tokens = Usage(
            usage_count(usage, "input_tokens"), usage_count(usage, "output_tokens"),
            usage_count(details, "thinking_tokens"),
        ) if usage else Usage()  # fmt: skip
        served = data.get("model")
        completion = Completion(
            request_id,
            text,
            usage=tokens,
            finish_reason=_FINISH.get(stop, stop) if stop else None,
            refusal=refusal,
            served_model=served if isinstance(served, str) else None,
            truncated=truncated,
            rate_limit=limits,
            reasoning=clean_reply(thought, self.secrets)[0] if thought is not None else None,
        )
        return redact_completion(completion, self.secrets)  # the key out of `model` and `finish_reason` too

    async def aclose(self) -> None:
        for route in self.routes:
            await route.aclose()


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


@contextlib.contextmanager
def sdk_errors(key: Secrets, body: dict[str, Any] | None = None) -> Iterator[None]:
    """Map the SDK's exceptions onto ours (retry or fail fast), with the key redacted from every message;
    `body` (what was sent) lets a 400 that names a sent field be told apart (harness/calling/backends/base.py)."""
    try:
        yield
    except ErrorReply as e:
        raise reply_error(e, key, body or ()) from None
    except anthropic.APIStatusError as e:
        message = redact(e.api_message or e.message, key)
        raise status_error(e.status_code, message, e.response.headers, sent=body or ()) from None
    except anthropic.APIConnectionError as e:  # APITimeoutError included
        raise sdk_connection_error(e, key) from None
    except UnicodeEncodeError as e:  # before ValueError: what we send, not the reply
        raise unencodable_prompt(e) from None
    except (anthropic.APIResponseValidationError, ValueError) as e:  # ValueError: not JSON, or not UTF-8
        raise MalformedReply(f"malformed reply: {redact(str(e), key)[:200]}") from None
