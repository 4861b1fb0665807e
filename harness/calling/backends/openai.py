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

from openai import AsyncOpenAI

from harness.calling.backends import backend_key, constrain_scale
from harness.calling.backends.base import (
    ClientPool,
    MalformedReply,
    PermanentError,
    RemoteBackend,
    clean_reply,
    usage_count,
)
from harness.calling.backends.http import ErrorReply, Route, open_routes, route_secrets
from harness.calling.backends.openai_errors import sdk_errors
from harness.calling.backends.openai_logprobs import logprob_fields, score_probs_from
from harness.calling.backends.openai_names import DEFAULT_REASONING_TOKENS, default_chat  # shared with --dry-run
from harness.calling.backends.reading import read_reply
from harness.calling.backends.thinking import thinking_for
from harness.calling.backends.transport import MAX_REPLY_MB
from harness.calling.redaction import redact, redact_completion
from harness.config.settings import RunConfig
from harness.scoring.constrained import gbnf, response_format
from harness.types import Completion, HarnessError, RateLimit, Request, Usage

CHAT_ENDPOINT, RAW_ENDPOINT = "/v1/chat/completions", "/v1/completions"


def from_config(config: RunConfig) -> OpenAIBackend:
    """The run's model at OpenAI or at --base-url."""
    api = config.api
    return OpenAIBackend(
        config.model,
        backend_key("openai", api.base_urls),
        api.base_urls,
        timeout=api.timeout,
        max_reply_mb=api.max_reply_mb,
        reasoning=api.reasoning,
        reasoning_tokens=api.reasoning_tokens,
        reasoning_effort=api.reasoning_effort,
        chat=config.chat,
        stop=config.stop,
        max_tokens=config.max_tokens,
        expected=config.scoring == "expected",
        constrain=constrain_scale(config),
        grammar=config.constrain == "grammar",
    )


class OpenAIBackend(RemoteBackend):
    """Chat or (legacy) Completions; one AsyncOpenAI client per base URL, SDK retries off (dispatch retries)."""

    name = "openai"

    def __init__(
        self,
        model: str,
        api_key: str,
        base_urls: Sequence[str] = (),
        timeout: float = 120.0,
        max_reply_mb: float = MAX_REPLY_MB,
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
        self.chat = chat if chat is not None else default_chat(model, base_urls)
        # harness/calling/backends/thinking.py: OpenAI's reasoning models by name, open ones at a server too
        self.thinking = thinking_for("openai", model, reasoning, reasoning_tokens, self.chat, base_urls)
        self.reasoning = self.thinking.on
        self.reasoning_tokens = reasoning_tokens
        self.reasoning_effort = reasoning_effort
        self.stop = list(stop)
        self.max_tokens = max_tokens  # what describe() records; each Request carries its own
        self.expected = expected  # --scoring expected: ask for the first token's log-probabilities
        self.constrain = constrain  # --constrain: the label scale's integers, forced by a JSON schema
        self.grammar = grammar  # --constrain grammar: forced by llama.cpp's GBNF `grammar` field instead
        urls: Sequence[str | None] = list(base_urls) or [None]  # None: the SDK's default (or OPENAI_BASE_URL)
        # One Route per base URL: the SDK client (typed calls: templates, batches, embeddings) and the aiohttp
        # session every request goes through (calling/backends/http.py, transport.py).
        self.routes = open_routes(
            urls,
            timeout,
            lambda url, http: AsyncOpenAI(
                api_key=api_key, base_url=url, max_retries=0, timeout=timeout, http_client=http
            ),
            max_reply_mb,
        )
        self.clients = [r.client for r in self.routes]
        self.base_urls = [str(c.base_url) for c in self.clients]
        self.pool = ClientPool(self.routes)
        self.secrets = route_secrets(api_key, self.routes)  # never stored or printed (calling/redaction.py)

    @property
    def endpoint(self) -> str:
        return CHAT_ENDPOINT if self.chat else RAW_ENDPOINT

    def params(self, request: Request) -> dict[str, Any]:
        """The decoding fields of the request body."""
        if self.reasoning and self.thinking.combined:  # OpenAI's reasoning models
            params: dict[str, Any] = {"max_completion_tokens": self.reasoning_tokens}
            if self.reasoning_effort is not None:
                params["reasoning_effort"] = self.reasoning_effort
        else:  # an open reasoning model's thought and answer share max_tokens
            params = {"max_tokens": self.thinking.max_tokens(request.max_tokens), "temperature": request.temperature}
        if self.thinking.switch is not None:  # vLLM, SGLang, llama.cpp: the chat template's thinking switch
            params["chat_template_kwargs"] = {"enable_thinking": self.thinking.switch}
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
        if self.reasoning and not self.thinking.combined:
            record["note"] = (
                f"open reasoning model: {self.reasoning_tokens} thinking tokens plus the answer's in max_tokens; "
                "the paper's 20-token budget is not applicable"
            )
        elif self.reasoning:
            record["omitted"] = ["temperature", "max_tokens"]
            record["note"] = (
                "reasoning model: it rejects temperature and max_tokens, and its hidden reasoning tokens count "
                "against max_completion_tokens (billed as output), so the paper's 20-token budget is not applicable"
            )
        return record

    def output_budget(self, request: Request) -> int:
        return self.thinking.max_tokens(request.max_tokens)

    async def send(self, request: Request) -> Completion:
        body = self.body(request)
        with self.pool.lease() as route, sdk_errors(self.secrets, body):
            try:
                reply = await route.call(body, self._capture_call(body))
            except ErrorReply as e:
                if e.status != 404:
                    raise  # sdk_errors classifies it
                raise await self.not_found(route, e) from None
        return read_reply(request.id, reply, self.secrets, lambda d: self.completion_from(request.id, d, reply.limits))

    async def not_found(self, route: Route, e: ErrorReply) -> PermanentError:
        """A 404 explained. The server's model list is asked only now, as a hint: a model it does not list
        (while it lists some), a server without /v1/completions for raw prompts, or a wrong --base-url."""
        message = redact(e.message, self.secrets)
        served = await route.models()
        if served and self.model not in served:
            shown = redact(", ".join(repr(m) for m in served[:10]) + (" ..." if len(served) > 10 else ""), self.secrets)
            return PermanentError(
                f"model {self.model!r} is not served at {route.link.base_url}: it serves {shown} (HTTP 404: {message})",
                fatal=True,
            )
        if e.code == "model_not_found" or self.model in message:  # the server's own words about the model
            return PermanentError(f"HTTP 404: {message}", fatal=True)
        if not self.chat:
            return PermanentError(
                f"HTTP 404 from {e.url}: this server has no {RAW_ENDPOINT}, which raw text prompts need; "
                f"--chat sends each prompt as one chat message to {CHAT_ENDPOINT} instead ({message})",
                fatal=True,
            )
        return PermanentError(
            f"HTTP 404 from {e.url}: is --base-url right? (an OpenAI-compatible server's usually ends in /v1) "
            f"({message})",
            fatal=True,
        )

    def _capture_call(self, body: dict[str, Any]) -> Callable[[AsyncOpenAI], Awaitable[Any]]:
        """The SDK's own typed call for this body, run once per base URL by http.capture."""
        # Fields the SDK's create() does not name travel in extra_body: a server's chat_template_kwargs (reasoning
        # switch) and, with --constrain on a compatible server, llama.cpp's grammar (and response_format on raw).
        untyped = {"chat_template_kwargs", "grammar"} | (set() if self.chat else {"response_format"})
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
            thought = reasoning_of(message)
        else:
            text = choice.get("text")
            thought = reasoning_of(choice)
        if not isinstance(text, str | None) or not isinstance(refusal, str | None):
            raise MalformedReply("malformed reply: the text is not a string")
        # --scoring expected: read at the answer's first token, never a thought's (openai_logprobs.py)
        probs = score_probs_from(choice, text, thought) if self.expected else None
        if refusal is not None:  # the model declined: an answer (scored invalid), its words kept
            refusal, _ = clean_reply(refusal, self.secrets)
            text = ""
        elif text is None:
            if finish not in ("length", "content_filter") and thought is None:
                raise MalformedReply(f"malformed reply: no text and no refusal (finish_reason {finish!r})")
            text = ""  # cut off before any text, filtered, or a thought with no answer: the model's (empty) answer
        text, truncated = clean_reply(text, self.secrets)
        usage = data.get("usage")
        tokens = Usage(usage_count(usage, "prompt_tokens"), usage_count(usage, "completion_tokens"), hidden(usage))
        served = data.get("model")
        completion = Completion(
            request_id,
            text,
            usage=tokens,
            finish_reason=finish if isinstance(finish, str) else None,
            refusal=refusal,
            served_model=served if isinstance(served, str) else None,
            truncated=truncated,
            rate_limit=limits,
            reasoning=clean_reply(thought, self.secrets)[0] if thought is not None else None,
            score_probs=probs,
        )
        return redact_completion(completion, self.secrets)  # the key out of `model` and `finish_reason` too

    async def aclose(self) -> None:
        for route in self.routes:
            await route.aclose()


def reasoning_of(part: dict[str, Any]) -> str | None:
    """The thought a server returned beside the answer: `reasoning_content` (vLLM before 0.10, SGLang, llama.cpp's
    server, DeepSeek's API) or `reasoning` (vLLM since); None where there is none."""
    for name in ("reasoning_content", "reasoning"):
        value = part.get(name)
        if isinstance(value, str) and value:
            return value
    return None


def hidden(usage: Any) -> int:
    """Reasoning tokens the reply reports: OpenAI's `completion_tokens_details.reasoning_tokens`; 0 where absent."""
    details = usage.get("completion_tokens_details") if isinstance(usage, dict) else None
    return usage_count(details, "reasoning_tokens")
