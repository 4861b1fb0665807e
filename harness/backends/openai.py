"""OpenAI Chat Completions via AsyncOpenAI, or any OpenAI-compatible server (vllm serve, llama.cpp, a gateway).

One user message holding the rendered prompt, temperature 0 and a 20-token budget, as in the paper
(Deshpande et al. 2023, App. A.3). Reasoning models (o1, o3, o4, gpt-5 ...) reject `temperature` and
`max_tokens` and bill their hidden reasoning inside `max_completion_tokens`, so for them we send only
`max_completion_tokens` (large enough to leave room for an answer) and say so in describe().
Several base URLs spread the load: each attempt goes to the server with the fewest requests in flight.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import openai
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletion

from harness.backends.base import (
    ClientPool,
    PermanentError,
    RetryableError,
    one_attempt_each,
    redact,
    status_error,
    timeout_error,
)
from harness.types import Completion, Request, Usage

# o1, o3-mini, o4-mini, gpt-5, gpt-5-mini ... but not gpt-5-chat-latest, which is a plain chat model.
_REASONING = re.compile(r"^(o\d|gpt-5)(?!.*-chat)")
DEFAULT_REASONING_TOKENS = 2048


def http_client() -> openai.DefaultAioHttpClient | None:
    """The SDK's aiohttp transport when aiohttp is installed: about a quarter less CPU per request than
    its default (tests/bench/bench_api.py), which is what keeps 32+ requests in flight near the ideal rate."""
    try:
        return openai.DefaultAioHttpClient()
    except RuntimeError:  # aiohttp missing: the SDK's default httpx transport
        return None


def is_reasoning_model(model: str) -> bool:
    """Whether the name is one of OpenAI's reasoning models (no temperature, reasoning billed as output)."""
    return bool(_REASONING.match(model))


class OpenAIBackend:
    """Chat Completions; one AsyncOpenAI client per base URL, SDK retries off (dispatch retries)."""

    name = "openai"
    remote = True
    endpoint = "/v1/chat/completions"  # the batch path names it in every JSONL line

    def __init__(
        self,
        model: str,
        api_key: str,
        base_urls: Sequence[str] = (),
        timeout: float = 120.0,
        reasoning: bool | None = None,
        reasoning_tokens: int = DEFAULT_REASONING_TOKENS,
        reasoning_effort: str | None = None,
    ) -> None:
        self.model = model
        self._key = api_key
        self.reasoning = is_reasoning_model(model) if reasoning is None else reasoning
        self.reasoning_tokens = reasoning_tokens
        self.reasoning_effort = reasoning_effort
        urls: Sequence[str | None] = list(base_urls) or [None]  # None: the SDK's default (or OPENAI_BASE_URL)
        self.clients = [
            AsyncOpenAI(api_key=api_key, base_url=u, max_retries=0, timeout=timeout, http_client=http_client())
            for u in urls
        ]
        self.base_urls = [str(c.base_url) for c in self.clients]
        self.pool = ClientPool(self.clients)

    def params(self, request: Request) -> dict[str, Any]:
        """The decoding fields of the request body."""
        if self.reasoning:
            params: dict[str, Any] = {"max_completion_tokens": self.reasoning_tokens}
            if self.reasoning_effort is not None:
                params["reasoning_effort"] = self.reasoning_effort
            return params
        return {"max_tokens": request.max_tokens, "temperature": request.temperature}

    def body(self, request: Request) -> dict[str, Any]:
        """The exact JSON body of one request: `send` posts it, the batch path (harness/batch) uploads it."""
        return {"model": self.model, "messages": [{"role": "user", "content": request.prompt}], **self.params(request)}

    def describe(self) -> dict[str, object]:
        sent = self.params(Request("", ""))
        record: dict[str, object] = {
            "api": "chat.completions",
            "base_urls": sorted(self.base_urls),
            "messages": "one user message holding the rendered prompt",
            "sent": sent,
            "reasoning_model": self.reasoning,
            "deterministic": sent.get("temperature") == 0.0,
        }
        if self.reasoning:
            record["omitted"] = ["temperature", "max_tokens"]
            record["note"] = (
                "reasoning model: it rejects temperature and max_tokens, and its hidden reasoning tokens count "
                "against max_completion_tokens (billed as output), so the paper's 20-token budget is not applicable"
            )
        return record

    def output_budget(self, request: Request) -> int:
        return self.reasoning_tokens if self.reasoning else request.max_tokens

    async def send(self, request: Request) -> Completion:
        with self.pool.lease() as client, sdk_errors(self._key):
            response = await client.chat.completions.create(**self.body(request))
        return self.completion_from(request.id, response)

    def completion_from(self, request_id: str, response: ChatCompletion) -> Completion:
        """A reply as a Completion, whether it came one by one or in a batch's output file."""
        if not response.choices:
            raise PermanentError("malformed response: no choices")
        message = response.choices[0].message
        text = message.content or getattr(message, "refusal", None) or ""  # a refusal is an answer (invalid)
        usage = response.usage
        tokens = Usage(usage.prompt_tokens or 0, usage.completion_tokens or 0) if usage else Usage()
        return Completion(request_id, text, usage=tokens)

    def complete(self, requests: Sequence[Request]) -> AsyncIterator[Completion]:
        """One attempt per request, in order (harness/dispatch.py calls `send` with retries instead)."""
        return one_attempt_each(self.send, requests)

    async def aclose(self) -> None:
        await self.pool.aclose()


@contextlib.contextmanager
def sdk_errors(key: str) -> Iterator[None]:
    """Map the SDK's exceptions onto ours (retry or fail fast), with the key redacted from every message."""
    try:
        yield
    except openai.APIStatusError as e:
        message = redact(_provider_message(e), key)
        if e.status_code == 429 and _code(e) == "insufficient_quota":
            raise PermanentError(f"HTTP 429: {message}", fatal=True) from None
        raise status_error(e.status_code, message, e.response.headers) from None
    except openai.APITimeoutError as e:
        raise timeout_error(e, key) from None
    except openai.APIConnectionError as e:
        raise RetryableError(f"connection error: {redact(str(e), key)}") from None
    except (openai.APIResponseValidationError, ValueError) as e:  # ValueError: a body that is not JSON
        raise PermanentError(f"malformed response: {redact(str(e), key)[:200]}") from None


def _provider_message(e: openai.APIStatusError) -> str:
    body = e.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return inner["message"]
    return e.message


def _code(e: openai.APIStatusError) -> str | None:
    body = e.body
    inner = body.get("error", body) if isinstance(body, dict) else None
    return inner.get("code") if isinstance(inner, dict) else None
