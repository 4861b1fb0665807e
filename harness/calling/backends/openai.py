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

from collections.abc import Awaitable, Callable
from typing import Any

import httpx2
import openai
from openai import AsyncOpenAI

from harness.calling.backends.base import MalformedReply, NotAnAnswer, PermanentError, reply_usage, usage_count
from harness.calling.backends.openai_logprobs import logprob_fields, score_probs_from
from harness.calling.backends.openai_names import default_chat  # shared with --dry-run
from harness.calling.backends.provider import HTTPBackend
from harness.calling.backends.reading import ErrorReply
from harness.calling.backends.thinking import thinking_for
from harness.calling.backends.transport import Route
from harness.calling.redaction import redact
from harness.scoring.constrained import gbnf, response_format
from harness.types import Completion, HarnessError, RateLimit, Request

CHAT_ENDPOINT, RAW_ENDPOINT = "/v1/chat/completions", "/v1/completions"


class OpenAIBackend(HTTPBackend):
    """Chat or (legacy) Completions; one AsyncOpenAI client per base URL, SDK retries off (dispatch retries)."""

    name = "openai"
    sdk = openai
    thinking_rule = "openai-names"

    def setup(self) -> None:
        api, decoding = self.api, self.decoding
        if decoding.chat is False and not api.base_urls:
            raise HarnessError(
                f"--no-chat: hosted OpenAI models are chat-only ({self.model!r}); raw prompts need an "
                "OpenAI-compatible server (--base-url)"
            )
        self.chat = decoding.chat if decoding.chat is not None else default_chat(self.model, api.base_urls)
        # harness/calling/backends/thinking.py: OpenAI's reasoning models by name, open ones at a server too
        self.thinking = thinking_for(
            self.thinking_rule, self.model, api.reasoning, api.reasoning_tokens, self.chat, api.base_urls
        )
        self.reasoning = self.thinking.on
        self.reasoning_tokens = api.reasoning_tokens
        self.reasoning_effort = api.reasoning_effort
        self.expected = decoding.expected  # --scoring expected: ask for the first token's log-probabilities
        self.constrain = decoding.constrain  # --constrain: the label scale's integers, forced by a JSON schema
        self.grammar = decoding.grammar  # --constrain grammar: forced by llama.cpp's GBNF `grammar` field instead

    def client(self, api_key: str, url: str | None, http: httpx2.AsyncClient) -> AsyncOpenAI:
        return AsyncOpenAI(api_key=api_key, base_url=url, max_retries=0, timeout=self.api.timeout, http_client=http)

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

    async def refused(self, route: Route, e: ErrorReply, body: dict[str, Any]) -> Exception:
        """A 404 explained. The server's model list is asked only now, as a hint: a model it does not list
        (while it lists some), a server without /v1/completions for raw prompts, or a wrong --base-url."""
        if e.status != 404:
            return await super().refused(route, e, body)
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
            f"HTTP 404 from {e.url}: is {route.link.named_by} right? (an OpenAI-compatible server's usually ends in "
            f"/v1) ({message})",
            fatal=True,
        )

    def sdk_call(self, body: dict[str, Any]) -> Callable[[AsyncOpenAI], Awaitable[Any]]:
        """The SDK's own typed call for this body, run once per base URL by transport.py `capture`."""
        # Fields the SDK's create() does not name are left out of the call: a server's chat_template_kwargs
        # (reasoning switch) and, with --constrain on a compatible server, llama.cpp's grammar (and response_format
        # on raw). The capture keeps only the typed fields' order, and Template.encode sends the others after them,
        # where the SDK's extra_body would put them (tests/calling/test_transport_lean.py compares the bytes).
        untyped = {"chat_template_kwargs", "grammar"} | (set() if self.chat else {"response_format"})
        typed = {k: v for k, v in body.items() if k not in untyped}
        if self.chat:
            return lambda c: c.chat.completions.create(**typed)
        return lambda c: c.completions.create(**typed)

    def completion_from(self, request_id: str, data: Any, limits: RateLimit | None = None) -> Completion:
        """A reply's JSON as a Completion, whether it came one by one or in a batch's output file
        (harness/calling/batch): a Chat Completions reply when `chat`, else a (raw) Completions reply. Only the
        fields a Completion needs are read; anything else in the reply is ignored, as the SDK ignored it."""
        choices = data.get("choices") if isinstance(data, dict) else None
        if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
            raise NotAnAnswer("no choices")
        choice = choices[0]
        finish = choice.get("finish_reason")
        refusal = None
        if self.chat:
            message = choice.get("message")
            if not isinstance(message, dict):
                raise NotAnAnswer("a choice without a message")
            text, refusal = message.get("content"), message.get("refusal")
            thought = reasoning_of(message)
        else:
            text = choice.get("text")
            thought = reasoning_of(choice)
        if not isinstance(text, str | None) or not isinstance(refusal, str | None):
            raise NotAnAnswer("the text is not a string")
        # --scoring expected: read at the answer's first token, never a thought's (openai_logprobs.py)
        probs = score_probs_from(choice, text, thought) if self.expected else None
        if refusal is not None:  # the model declined: an answer (scored invalid), its words kept
            text = ""
        elif text is None:
            if finish not in ("length", "content_filter") and thought is None:
                raise MalformedReply(f"malformed reply: no text and no refusal (finish_reason {finish!r})")
            text = ""  # cut off before any text, filtered, or a thought with no answer: the model's (empty) answer
        usage = data.get("usage")
        tokens = reply_usage(usage, "prompt_tokens", "completion_tokens", hidden(usage))
        finish = finish if isinstance(finish, str) else None
        return self.answer(request_id, text, tokens, finish, data.get("model"), limits, refusal, thought, probs)


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
    return usage_count(details, "reasoning_tokens") or 0


from_config = OpenAIBackend.from_config  # what harness/calling/backends BACKENDS calls
