"""The one backend interface. Backends are batch-shaped, async, and know nothing of C-STS.

Two explicit kinds, each a base class with every attribute required; dispatch (harness/calling/dispatch.py)
tells them apart with one `match` on the class:

- `LocalBackend` (offline baselines, vllm, hf, sentence-transformers) implements `complete(requests)`. The
  dispatcher calls it ONCE with every request the cache could not answer, so a local engine sees the whole
  batch (vLLM's continuous batching), and yields one Completion per request in any order.
- `RemoteBackend` (openai, anthropic, openai-embeddings) implements `send(request)`: one attempt at one
  request (the JSON `body(request)` posted to `endpoint`), raising `RetryableError`, `MalformedReply` or
  `PermanentError` (below) instead of SDK exceptions. The dispatcher calls it per request under its
  concurrency limit, timeout and retry policy. Retries, concurrency and caching live there, in one place,
  never inside a backend.

Every backend goes through the same response cache (harness/calling/cache.py). Its key is a hash of
`backend.name`, `backend.model`, `backend.describe()` and the request's prompt and decoding fields, so
`describe()` must name everything besides the prompt that decides the answer (endpoint, decoding
parameters, chat template on or off, ...) and nothing that changes between identical runs (no
timestamps, no process ids, never a secret). A local backend whose answers are not worth storing sets
`cacheable = False` (the offline baselines: pure functions of the prompt).
"""

from __future__ import annotations

import email.utils
import os
import re
import time
import urllib.parse
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.calling.limits import rate_limit
from harness.calling.redaction import PLACEHOLDER_KEY, Secrets, redact
from harness.config.checks import http_urls
from harness.scoring.reasoning import THINK_TAGS
from harness.types import Completion, HarnessError, RateLimit, Request, ServerQueue, Usage


class LocalBackend(ABC):
    """Runs here: turns a batch of requests into completions, in any order; one Completion per Request id."""

    name: str
    model: str
    cacheable: bool = True  # False: a pure function of the prompt (offline baselines), nothing worth storing
    # Set by dispatch: called when the work starts (a model loaded), so the progress bar's estimate leaves the
    # loading out of its rate (harness/calling/progress.py). A backend with nothing to load never calls it.
    on_work: Callable[[], None] | None = None

    @abstractmethod
    def complete(self, requests: Sequence[Request]) -> AsyncIterator[Completion]:
        """Yield a Completion for every request (an `error` Completion when it failed for good)."""

    @abstractmethod
    def describe(self) -> dict[str, object]:
        """What decides the answers, for config.json and the cache key. No secrets."""


@dataclass(frozen=True)
class Decoding:
    """The run's decoding fields as a remote backend sends them, read from RunConfig in one place
    (harness/calling/backends `decoding`)."""

    chat: bool | None = None  # --chat / --no-chat; None: the provider's default
    stop: tuple[str, ...] = ()  # --stop
    max_tokens: int = 20  # what describe() records; each Request carries its own
    expected: bool = False  # --scoring expected: the first output token's log-probabilities
    constrain: tuple[int, ...] | None = None  # --constrain: the label scale's integers the answer is forced into
    grammar: bool = False  # --constrain grammar: llama.cpp's GBNF field rather than a JSON schema


class RemoteBackend(ABC):
    """An API backend: the dispatcher calls `send` per request, with its own retries, timeout and limit.

    `body(request)` is the exact JSON `send` posts to `endpoint` (e.g. "/v1/chat/completions"): the one
    source of truth for what a request is, for batch files too."""

    name: str
    model: str
    chat: bool  # the prompt goes out as one user message (counted with its wrapping for --max-cost)
    # What must never be stored or printed: the API key, the proxy's credentials (`redact_completion`).
    secrets: tuple[str, ...] = ()

    @property
    @abstractmethod
    def endpoint(self) -> str: ...

    @abstractmethod
    def describe(self) -> dict[str, object]:
        """What is sent and how (decoding parameters, endpoint), for config.json and the cache key. No secrets."""

    @abstractmethod
    def body(self, request: Request) -> dict[str, Any]:
        """The request body, exactly as sent (model, prompt or messages, decoding fields)."""

    @abstractmethod
    async def send(self, request: Request) -> Completion:
        """One attempt. Raises RetryableError or PermanentError; a returned Completion is a model answer."""

    @abstractmethod
    def output_budget(self, request: Request) -> int:
        """The most output tokens this request can be billed for (for --max-cost and --dry-run)."""

    @abstractmethod
    async def aclose(self) -> None:
        """Close the HTTP clients (inside the event loop that used them)."""

    async def served(self) -> list[dict[str, Any]] | None:
        """What the servers say they serve (llama.cpp's GET /props: harness/calling/backends/served.py), asked once
        before a run's cache lookup; the cache key names them by it instead of their addresses. None: by address."""
        return None

    async def capacity(self) -> int | None:
        """How many requests the server says it computes at once (llama.cpp's GET /props `total_slots`), asked once
        before a run's first request; None where it does not say (dispatch's limiter then finds out)."""
        return None

    async def queue(self) -> ServerQueue | None:
        """What the server says of its queue now (vLLM's GET /metrics: the requests it computes and those waiting),
        asked before a run's first request and, where it answered, every QUEUE_POLL seconds while requests are out
        (harness/calling/server_queue.py); None where it does not say."""
        return None


Backend = LocalBackend | RemoteBackend  # dispatch matches on which


class RetryableError(Exception):
    """A failure worth another try: 408/409/429/5xx/529, a dropped connection, a timeout, a malformed reply."""

    def __init__(
        self, message: str, retry_after: float | None = None, limited: bool = False, rate_limit: RateLimit | None = None
    ) -> None:
        super().__init__(message)
        self.retry_after = retry_after  # seconds the provider asked us to wait, if it said
        self.limited = limited  # a 429: the provider's rate limit (dispatch's limiter cuts its window)
        self.rate_limit = rate_limit  # what its rate-limit headers said (harness/calling/limits.py)


class Unreachable(RetryableError):
    """No connection to the server at `url` (refused, unreachable, no connection in time): retried, but while no
    request was ever answered only for --wait-for-server seconds (harness/calling/attempts.py)."""

    def __init__(self, message: str, url: str, named_by: str = "--base-url") -> None:
        super().__init__(message)
        # Where, for the one line the user reads: never a `?api-key=` query or a user:password@ (they are secrets)
        parts = urllib.parse.urlsplit(url)
        self.url = urllib.parse.urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, "", ""))
        self.named_by = named_by  # what gave that URL (transport.py Link.named_by), for the line's question


class MalformedReply(RetryableError):
    """A reply we cannot read (truncated JSON, invalid UTF-8, no text and no refusal): that request's problem,
    retried a few times (dispatch's MALFORMED_TRIES), never cached, never the whole run's."""


class NotAnAnswer(ValueError):
    """A 200 reply whose JSON is not an answer's shape (a list, an object without `choices`): kept as a malformed
    answer (reading.py), cached, never bought again; the server did answer, with something no rule reads."""


class PermanentError(Exception):
    """A failure that another try would repeat. `fatal`: every request would fail (401/403/404, or a 400 that
    names the request's shape), so the run stops. Otherwise it is this request's error, named by `kind`
    (e.g. "context_length_exceeded") so that the user is not told to rerun."""

    def __init__(self, message: str, fatal: bool = False, kind: str | None = None) -> None:
        super().__init__(f"{kind}: {message}" if kind else message)
        self.fatal = fatal
        self.kind = kind


RETRYABLE_STATUS = frozenset({408, 409, 429})  # and every 5xx (status_error), Anthropic's 529 "overloaded" too
FATAL_STATUS = frozenset({401, 403, 404})  # a bad key, no access, no such model: every request would fail
PROXY_AUTH = (
    "proxy authentication required (HTTP 407): put the proxy's user and password in the proxy variable's URL "
    "(http://user:password@host:port), or check the ones there"
)
REPLY_CAP_BYTES = 1_000_000  # a longer reply is cut here and flagged `truncated` (a score needs a few bytes)
REPLY_TAIL_BYTES = 64_000  # of a cut reply, at least its last this many bytes are kept (the answer after a thought)
_CLOSING = tuple({close.encode() for _, close in THINK_TAGS.values()})

# A prompt over the context length, in the words of OpenAI, vLLM, llama.cpp, TGI and Anthropic.
_CONTEXT = re.compile(
    r"context[_ ]length|maximum context|context (?:size|window)|maximum model length|prompt is too long"
    r"|exceed_context_size|too many (?:input )?tokens|tokens \+ `?max_new_tokens`? must be",
    re.IGNORECASE,
)
# A 400 about the request's shape (a parameter the model rejects): every request would get it.
_SHAPE_CODES = frozenset({"unsupported_parameter", "unsupported_value"})
_SHAPE = re.compile(
    r"unsupported parameter|not supported with this model|unrecognized request argument"
    r"|extra inputs are not permitted|unknown parameter",
    re.IGNORECASE,
)
_PROMPT_PARAMS = frozenset({"model", "messages", "prompt", "input"})


def status_error(
    status: int,
    message: str,
    headers: Mapping[str, str],
    code: str | None = None,
    param: str | None = None,
    sent: Collection[str] = (),
) -> RetryableError | PermanentError:
    """Map an HTTP error to our policy: retry 408/409/429/5xx/529; stop the run on 401/403/404 and on a 400
    that names the request's shape (`param` or the message names a parameter we sent, other than the prompt);
    any other 4xx is this request's own error (a prompt over the context length: `context_length_exceeded`)."""
    text = f"HTTP {status}: {message}"
    if status in RETRYABLE_STATUS or status >= 500:
        return RetryableError(text, retry_after_seconds(headers), status == 429, rate_limit(headers))
    if status in FATAL_STATUS:
        return PermanentError(text, fatal=True)
    if status == 407:  # an http:// base URL's request goes to the proxy itself, which answers it (https: transport.py)
        return PermanentError(f"{PROXY_AUTH}; the proxy said: {message}", fatal=True)
    if code == "context_length_exceeded" or _CONTEXT.search(f"{message} {code or ''}"):
        return PermanentError(text, kind="context_length_exceeded")
    if status == 413:
        return PermanentError(text, kind="request_too_large")
    names = [p for p in sent if p not in _PROMPT_PARAMS]
    named = bool(names) and re.search(rf"\b(?:{'|'.join(map(re.escape, names))})\b", message) is not None
    if status in (400, 422) and (
        code in _SHAPE_CODES or (param and param.split("[")[0] not in _PROMPT_PARAMS) or named or _SHAPE.search(message)
    ):
        return PermanentError(text, fatal=True)
    return PermanentError(text, kind="bad_request")


def unencodable_prompt(e: UnicodeEncodeError) -> PermanentError:
    """A request body UTF-8 cannot encode, which only a lone surrogate (half of a UTF-16 pair, not a character)
    makes: the text the prompt was made from holds one (a data file, or a model's reply reused in a prompt, such as
    a rewritten condition). Not the reply's fault and not sent; another try would fail the same way."""
    found = ", ".join(dict.fromkeys(f"U+{ord(ch):04X}" for ch in e.object[e.start : e.end]))
    return PermanentError(
        f"not sent: the prompt holds {found}, a lone surrogate (half of a UTF-16 pair, not a character), which UTF-8 "
        "cannot encode; it came from the text the prompt was made of (a data file, or a model's earlier reply such "
        "as a rewritten condition)",
        kind="unencodable_prompt",
    )


def retry_after_seconds(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds to wait from `retry-after-ms` (OpenAI, Anthropic) or `retry-after` (seconds or an HTTP date)."""
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def api_key(variable: str, backend: str, base_urls: Sequence[str]) -> str:
    """The key from the environment; a placeholder only for a server of your own (--base-url)."""
    key = os.environ.get(variable, "").strip()
    if key:
        return key
    if base_urls:
        return PLACEHOLDER_KEY  # vllm serve, llama.cpp & co. accept any key unless started with one
    raise HarnessError(f"{variable} is not set: the {backend} backend needs an API key")


def env_base_url(variable: str | None) -> str | None:
    """The base URL the provider's SDK would read from its variable (OPENAI_BASE_URL, ANTHROPIC_BASE_URL) when no
    --base-url is given, read here instead and checked as --base-url is (config/checks.py `http_urls`: http(s), and a
    query the SDK can send apart, e.g. a gateway's `?api-key=`); None when the variable is unset."""
    if variable is None or (url := os.environ.get(variable)) is None:
        return None
    http_urls([url], variable)  # the error names the variable, never its query's values
    return url


def clean_reply(text: str, key: Secrets) -> tuple[str, bool]:
    """(the reply as stored, whether it was cut): the key redacted, at most REPLY_CAP_BYTES of UTF-8. A longer reply
    keeps its beginning and its end: a reasoning model's answer comes after its inline thought, which may be longer
    than the cap, so the end is kept from the last closing tag of a known thought format (scoring/reasoning.py),
    else its last REPLY_TAIL_BYTES, and the thought loses its middle, never the answer."""
    text = redact(text, key)
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) <= REPLY_CAP_BYTES:
        return text, False
    start = min([len(raw) - REPLY_TAIL_BYTES, *(i for tag in _CLOSING if (i := raw.rfind(tag)) >= 0)])
    start = max(start, len(raw) - REPLY_CAP_BYTES // 2)  # half for the end at most: the beginning is kept too
    while raw[start] & 0xC0 == 0x80:  # not inside a character
        start += 1
    tail = raw[start:]
    return raw[: REPLY_CAP_BYTES - len(tail)].decode("utf-8", "ignore") + tail.decode("utf-8", "ignore"), True


MAX_TOKENS_REPORTED = 10**9  # a count past this is no count: a 400-digit one would not even fit the cache's integers


def token_count(value: Any) -> int | None:
    """A token count a reply reports: an integer from 0 to MAX_TOKENS_REPORTED; None for anything else (missing,
    negative, a bool, a float, a string, 400 digits)."""
    return value if type(value) is int and 0 <= value <= MAX_TOKENS_REPORTED else None


def usage_count(usage: Any, name: str) -> int | None:
    """A token count from a reply's `usage` JSON (token_count); None where it is missing or not a count."""
    return token_count(usage.get(name)) if isinstance(usage, dict) else None


def reply_usage(usage: Any, input_name: str, output_name: str, reasoning: int | None = None) -> Usage:
    """The Usage a reply's `usage` JSON reports; `reported` False when either count is missing or not a count, so
    that --max-cost charges the request's reservation instead of nothing (budget.py): a negative or missing count
    must not turn the limit off. `reasoning`: of the output, at most all of it."""
    given, got = usage_count(usage, input_name), usage_count(usage, output_name)
    output = got or 0
    return Usage(given or 0, output, min(reasoning or 0, output), reported=given is not None and got is not None)
