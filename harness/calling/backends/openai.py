"""OpenAI via AsyncOpenAI, or any OpenAI-compatible server (vllm serve, llama.cpp, transformers serve, a gateway).

Two ways to send a prompt (`chat`): one user message to `/v1/chat/completions`, or the rendered prompt
verbatim to `/v1/completions` (raw, as the paper sent open models: no chat template, no system prompt).
Hosted OpenAI models are chat-only; a compatible server defaults to raw, so `vllm serve` and the offline
vLLM engine see the same prompt tokens (OpenAI's own model names stay chat behind a gateway too).
Temperature 0 and a 20-token budget, as in the paper (Deshpande et al. 2023, App. A.3). Reasoning models
(o1, o3, o4, gpt-5 ...) reject `temperature` and `max_tokens` and bill their hidden reasoning inside
`max_completion_tokens`, so for them we send only `max_completion_tokens` (large enough to leave room for an
answer) and say so in describe(). Several base URLs spread the load:
each attempt goes to the server with the fewest requests in flight.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import openai
from openai import AsyncOpenAI

from harness.calling.backends.base import (
    ClientPool,
    MalformedReply,
    RemoteBackend,
    api_key,
    clean_reply,
    usage_count,
)
from harness.calling.backends.http import Route
from harness.calling.backends.openai_errors import sdk_errors
from harness.calling.backends.openai_logprobs import logprob_fields, score_probs_from
from harness.calling.backends.openai_names import (  # the pure name rules, shared with --dry-run
    DEFAULT_REASONING_TOKENS,
    default_chat,
    is_reasoning_model,
    output_budget,
)
from harness.config.settings import RunConfig
from harness.scoring.constrained import gbnf, response_format, scale_values
from harness.types import Completion, HarnessError, RateLimit, Request, Usage

CHAT_ENDPOINT, RAW_ENDPOINT = "/v1/chat/completions", "/v1/completions"


def http_client() -> openai.DefaultAioHttpClient | None:
    """The SDK's aiohttp transport when aiohttp is installed, for the SDK's own calls: the Batch API and
    embeddings (one-by-one requests go through harness/calling/backends/http.py instead)."""
    try:
        return openai.DefaultAioHttpClient()
    except RuntimeError:  # aiohttp missing: the SDK's default httpx transport
        return None


def from_config(config: RunConfig, label_range: tuple[float, float]) -> OpenAIBackend:
    """The run's model at OpenAI or at --base-url (whose model list, where it has one, must name it)."""
    api = config.api
    backend = OpenAIBackend(
        config.model,
        api_key("OPENAI_API_KEY", "openai", api.base_urls),
        api.base_urls,
        timeout=api.timeout,
        reasoning=api.reasoning,
        reasoning_tokens=api.reasoning_tokens,
        reasoning_effort=api.reasoning_effort,
        chat=config.chat,
        stop=config.stop,
        max_tokens=config.max_tokens,
        expected=config.scoring == "expected",
        constrain=scale_values(label_range) if config.constrain is not None else None,
        grammar=config.constrain == "grammar",
    )
    if api.base_urls:
        backend.check_model()  # a server that lists its models must list this one
    return backend


class OpenAIBackend(RemoteBackend):
    """Chat or (legacy) Completions; one AsyncOpenAI client per base URL, SDK retries off (dispatch retries)."""

    name = "openai"

    def __init__(
        self,
        model: str,
        api_key: str,
        base_urls: Sequence[str] = (),
        timeout: float = 120.0,
        reasoning: bool | None = None,
        reasoning_tokens: int = DEFAULT_REASONING_TOKENS,
        reasoning_effort: str | None = None,
        chat: bool | None = None,
        stop: Sequence[str] = (),
        max_tokens: int = 20,
        expected: bool = False,
        constrain: tuple[int, ...] | None = None,
        grammar: bool = False,
    ) -> None:
        if chat is False and not base_urls:
            raise HarnessError(
                f"--no-chat: hosted OpenAI models are chat-only ({model!r}); raw prompts need an "
                "OpenAI-compatible server (--base-url)"
            )
        self.model = model
        self._key = api_key
        self.reasoning = is_reasoning_model(model) if reasoning is None else reasoning
        self.reasoning_tokens = reasoning_tokens
        self.reasoning_effort = reasoning_effort
        self.chat = chat if chat is not None else default_chat(model, base_urls)
        self.stop = list(stop)
        self.max_tokens = max_tokens  # what describe() records; each Request carries its own
        self.expected = expected  # --scoring expected: ask for the first token's log-probabilities
        self.constrain = constrain  # --constrain: the label scale's integers, forced by a JSON schema
        self.grammar = grammar  # --constrain grammar: forced by llama.cpp's GBNF `grammar` field instead
        urls: Sequence[str | None] = list(base_urls) or [None]  # None: the SDK's default (or OPENAI_BASE_URL)
        self.clients = [
            AsyncOpenAI(api_key=api_key, base_url=u, max_retries=0, timeout=timeout, http_client=http_client())
            for u in urls
        ]
        self.base_urls = [str(c.base_url) for c in self.clients]
        self.routes = [Route(c, timeout) for c in self.clients]  # one-by-one requests (calling/backends/http.py)
        self.pool = ClientPool(self.routes)

    @property
    def endpoint(self) -> str:
        return CHAT_ENDPOINT if self.chat else RAW_ENDPOINT

    def params(self, request: Request) -> dict[str, Any]:
        """The decoding fields of the request body."""
        if self.reasoning:
            params: dict[str, Any] = {"max_completion_tokens": self.reasoning_tokens}
            if self.reasoning_effort is not None:
                params["reasoning_effort"] = self.reasoning_effort
        else:
            params = {"max_tokens": request.max_tokens, "temperature": request.temperature}
        if self.stop:
            params["stop"] = list(self.stop)
        return params | self.protocol_fields()

    def protocol_fields(self) -> dict[str, Any]:
        """--scoring expected: log-probabilities; --constrain: the scale's JSON schema (Structured Outputs, which
        vLLM, SGLang and llama.cpp's llama-server also take on /v1/completions), or with `grammar` a GBNF grammar
        over the scale's integers (llama.cpp servers, llama-cpp-python's included, which reads no json_schema)."""
        fields = logprob_fields(self.chat) if self.expected else {}
        if self.constrain is not None and self.grammar:
            fields["grammar"] = gbnf(self.constrain)
        elif self.constrain is not None:
            fields["response_format"] = response_format(self.constrain)
        return fields

    def body(self, request: Request) -> dict[str, Any]:
        """The exact JSON body sent to `endpoint` for this request: `send` posts it, the batch path
        (harness/batch) uploads it; the one source of truth."""
        prompt: dict[str, Any] = (
            {"messages": [{"role": "user", "content": request.prompt}]} if self.chat else {"prompt": request.prompt}
        )
        return {"model": self.model, **prompt, **self.params(request)}

    def describe(self) -> dict[str, object]:
        sent = self.params(Request("", "", max_tokens=self.max_tokens))
        record: dict[str, object] = {
            "api": "chat.completions" if self.chat else "completions",
            "endpoint": self.endpoint,
            "chat": self.chat,
            "base_urls": sorted(self.base_urls),
            "messages": "one user message holding the rendered prompt"
            if self.chat
            else "none: the rendered prompt verbatim (no chat template)",
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
        return output_budget(request, self.reasoning, self.reasoning_tokens)

    async def send(self, request: Request) -> Completion:
        body = self.body(request)
        with self.pool.lease() as route, sdk_errors(self._key, body):
            data, limits = await route.call(body, self._capture_call(body))
        return self.completion_from(request.id, data, limits)

    def _capture_call(self, body: dict[str, Any]) -> Callable[[AsyncOpenAI], Awaitable[Any]]:
        """The SDK's own typed call for this body, run once per base URL by http.capture."""
        # Fields the SDK's create() does not name (--constrain on a compatible server) travel in extra_body.
        untyped = {"grammar"} if self.chat else {"grammar", "response_format"}
        typed = {k: v for k, v in body.items() if k not in untyped}
        extra = {k: v for k, v in body.items() if k in untyped} or None
        if self.chat:
            return lambda c: c.chat.completions.create(**typed, extra_body=extra)
        return lambda c: c.completions.create(**typed, extra_body=extra)

    def completion_from(self, request_id: str, data: Any, limits: RateLimit | None = None) -> Completion:
        """A reply's JSON as a Completion, whether it came one by one or in a batch's output file
        (harness/calling/batch): a Chat Completions reply when `chat`, else a (raw) Completions reply. Only the
        fields a Completion needs are read; anything else in the reply is ignored, as the SDK ignored it."""
        choices = data.get("choices") if isinstance(data, dict) else None
        if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
            raise MalformedReply("malformed reply: no choices")
        choice = choices[0]
        finish = choice.get("finish_reason")
        refusal = None
        if self.chat:
            message = choice.get("message")
            if not isinstance(message, dict):
                raise MalformedReply("malformed reply: a choice without a message")
            text, refusal = message.get("content"), message.get("refusal")
        else:
            text = choice.get("text")
        if not isinstance(text, str | None) or not isinstance(refusal, str | None):
            raise MalformedReply("malformed reply: the text is not a string")
        if refusal is not None:  # the model declined: an answer (scored invalid), its words kept
            refusal, _ = clean_reply(refusal, self._key)
            text = ""
        elif text is None:
            if finish not in ("length", "content_filter"):
                raise MalformedReply(f"malformed reply: no text and no refusal (finish_reason {finish!r})")
            text = ""  # cut off before any text, or filtered: the model's (empty) answer
        text, truncated = clean_reply(text, self._key)
        usage = data.get("usage")
        tokens = Usage(usage_count(usage, "prompt_tokens"), usage_count(usage, "completion_tokens"))
        served = data.get("model")
        return Completion(
            request_id,
            text,
            usage=tokens,
            finish_reason=finish if isinstance(finish, str) else None,
            refusal=refusal,
            served_model=served if isinstance(served, str) else None,
            truncated=truncated,
            rate_limit=limits,
            score_probs=score_probs_from(choice) if self.expected else None,
        )

    def served_models(self) -> list[str] | None:
        """The model ids every base URL lists at /v1/models; None where a server offers no such list."""
        served: list[str] | None = None
        for url in self.base_urls:
            client = openai.OpenAI(api_key=self._key, base_url=url, max_retries=0, timeout=10.0)
            try:
                ids = [m.id for m in client.models.list()]
            except (openai.APIError, ValueError, TypeError, AttributeError):
                continue  # 404, unreachable, or an odd body: the run itself reports what matters
            finally:
                client.close()
            served = ids if served is None else [m for m in served if m in ids]
        return served

    def check_model(self) -> None:
        """Fail in one line when a server lists its models and this one is not among them."""
        served = self.served_models()
        # An empty list offers nothing to check against (transformers serve lists no model for a local folder).
        if served and self.model not in served:
            shown = ", ".join(repr(m) for m in served[:10]) + (" ..." if len(served) > 10 else "")
            raise HarnessError(
                f"model {self.model!r} is not served at {', '.join(self.base_urls)}: it serves {shown or 'nothing'}"
            )

    async def aclose(self) -> None:
        for route in self.routes:
            await route.aclose()
