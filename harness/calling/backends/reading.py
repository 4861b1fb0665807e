"""A reply under our policy: a 200 read without ever losing it, an error reply classified (issue 30). Apart from the
wire (transport.py) because dispatch (`holds`) and the batch path (`reported_error`, `unreadable`) read replies too,
and neither loads aiohttp for it.

A 200 reply that came back was paid for. Its body is read whole (bounded: transport.py), then `json.loads`, then the
backend's `completion_from`. A body that is not JSON (cut off, not UTF-8) stays a `MalformedReply`, retried a few
times as before: that is a broken delivery, not an answer. Anything else that fails once the JSON is in hand (a
nesting too deep for the decoder, a number no float holds, a field no rule foresaw) is not an exception that turns
the paid answer into an uncached error, bought again by every rerun: the reply becomes a Completion marked
`malformed` with a reason code, its body kept as received in `raw` (key redacted, capped), cached like any answer
and scored invalid (reason "malformed"). That includes JSON of no answer's shape (a list, an object without
`choices`: base.py NotAnAnswer).

One 200 is no answer: a gateway's error report, `{"error": {...}}` with no answer beside it. OpenRouter documents
that once the model has started, an error comes with status 200 and the status it stands for in `error.code` (502:
the model is down, 429, 408); no answer was made, so none is kept. It is read as that status would be (base.py
`status_error`: 408/429/5xx retried, a 4xx this request's error or the run's); without a status, as an unreadable
reply (retried a few times, then that request's error, never cached).

An error status is an `ErrorReply` (status, headers, body and its `error` fields); `reply_error` classifies it by
our own policy (base.py `status_error`); `sdk_errors` maps those and the SDKs' own exceptions (their typed calls:
Batch APIs, embeddings) the same way, the key redacted from every message.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from harness.calling.backends.base import (
    MalformedReply,
    PermanentError,
    RetryableError,
    clean_reply,
    status_error,
    unencodable_prompt,
)
from harness.calling.redaction import Secrets, redact
from harness.types import Completion, RateLimit

TOO_LARGE = "too-large"  # a body over --max-reply-mb (transport.py MAX_REPLY_MB)
TOO_DEEP = "too-deep"  # JSON nested deeper than Python's decoder goes (RecursionError)
UNREADABLE = "unreadable"  # the JSON parsed, but reading the answer out of it failed
# The cap a too-large verdict was read under, as transport.py's ReplyTooLarge says it ("... is over 32 MB (...")
_CAP = re.compile(rf"^{TOO_LARGE}: .*? over (\S+) MB\b")


@dataclass(frozen=True)
class Received:
    """A 200 reply as it came: its body (decoded; only its first bytes when it was over the cap, `over` saying
    so) and what its rate-limit headers said."""

    content: bytes
    limits: RateLimit | None
    over: str | None = None


def read_reply(request_id: str, reply: Received, key: Secrets, interpret: Callable[[Any], Completion]) -> Completion:
    """The reply's Completion; a MalformedReply only when the body is not JSON at all."""
    content, limits = reply.content, reply.limits
    if reply.over is not None:  # over --max-reply-mb: its first bytes kept, never read as an answer
        return malformed(request_id, content, limits, key, TOO_LARGE, reply.over)
    try:
        data = json.loads(content)
    except RecursionError:
        return malformed(request_id, content, limits, key, TOO_DEEP, "JSON nested deeper than the decoder reads")
    except ValueError as e:  # not JSON, or not UTF-8 (UnicodeDecodeError is a ValueError)
        raise MalformedReply(f"malformed reply: {redact(str(e), key)[:200]}") from None
    reported = reported_error(data, key)
    if reported is not None:
        raise reported
    try:
        return interpret(data)
    except MalformedReply:
        raise
    except Exception as e:  # a paid answer is kept whatever reading it did, never an "unexpected" error
        return unreadable(request_id, content, key, e, limits)


def reported_error(data: Any, key: Secrets) -> RetryableError | PermanentError | None:
    """The error a gateway reported in a 200 reply instead of an answer (module docstring), or None: a JSON object
    with a non-empty `error` and no answer (`choices`, Anthropic's `content`); its status from `error.code` or
    `error.status`, an integer 400-599."""
    if not isinstance(data, dict) or not data.get("error") or data.get("choices") or data.get("content"):
        return None
    inner = data["error"]
    fields = inner if isinstance(inner, dict) else {}
    said = fields.get("message")
    message = said if isinstance(said, str) else json.dumps(inner, default=str)
    message = f"{redact(message, key)[:300]} (an error sent with status 200)"
    status = next((v for v in (fields.get("code"), fields.get("status")) if type(v) is int and 400 <= v <= 599), None)
    if status is None:
        return MalformedReply(f"malformed reply: {message}")
    return status_error(status, message, {})


def unreadable(
    request_id: str, content: bytes, key: Secrets, e: Exception, limits: RateLimit | None = None
) -> Completion:
    """A reply whose JSON parsed but could not be read as an answer (`e` says why), kept as malformed."""
    return malformed(request_id, content, limits, key, UNREADABLE, f"{type(e).__name__}: {redact(str(e), key)[:200]}")


def malformed(
    request_id: str, content: bytes, limits: RateLimit | None, key: Secrets, code: str, detail: str
) -> Completion:
    raw, truncated = clean_reply(content.decode("utf-8", "replace"), key)
    return Completion(request_id, "", malformed=f"{code}: {detail}", raw=raw, truncated=truncated, rate_limit=limits)


def holds(stored: Completion, max_reply_mb: float) -> bool:
    """Whether a stored Completion is what this run, reading replies under `max_reply_mb`, would make of its reply.

    An answer is stored as it came and read after (the thought split, the parse, the scale): it holds under any
    setting. A too-large verdict is not an answer but a reading under a cap, and the body past the cap was never
    kept: it holds for a run whose cap is no larger (the same reply would be cut again), and a run with a larger
    cap asks again (issue 41: a run that shared a cache with a smaller --max-reply-mb got its verdicts as answers).
    A verdict whose cap cannot be read is asked again."""
    if stored.malformed is None or not stored.malformed.startswith(f"{TOO_LARGE}:"):
        return True
    found = _CAP.match(stored.malformed)
    if found is None:
        return False
    said = found.group(1)  # the cap as ReplyTooLarge wrote it ({:g}): the same setting always reads the same
    try:
        return f"{max_reply_mb:g}" == said or max_reply_mb <= float(said)
    except ValueError:
        return False


class ErrorReply(Exception):
    """A reply with an error status (>= 300): its status, headers and body, and the body's `error` fields
    (OpenAI's and Anthropic's `{"error": {"message", "code", "param"}}`, or a bare `message` / `detail`)."""

    def __init__(self, url: str, status: int, headers: Mapping[str, str], content: bytes) -> None:
        self.url, self.status, self.headers, self.content = url, status, headers, content
        try:
            body = json.loads(content)
        except ValueError:
            body = None
        inner = body.get("error", body) if isinstance(body, dict) else None
        inner = inner if isinstance(inner, dict) else {}
        message = inner.get("message", inner.get("detail"))
        if not isinstance(message, str):
            message = content[:300].decode("utf-8", "replace").strip() or "(no message)"
        self.message = message
        self.code = _text(inner.get("code"))
        self.param = _text(inner.get("param"))
        super().__init__(f"HTTP {status}: {message}")


def _text(value: object) -> str | None:
    return str(value) if value is not None else None


def reply_error(e: ErrorReply, key: Secrets, sent: Collection[str] = ()) -> RetryableError | PermanentError:
    """An error reply under our policy (harness/calling/backends/base.py `status_error`), the key redacted."""
    return _status(e.status, redact(e.message, key), e.headers, e.code, e.param, sent)


def _status(
    status: int, message: str, headers: Mapping[str, str], code: str | None, param: str | None, sent: Collection[str]
) -> RetryableError | PermanentError:
    if status == 429 and code == "insufficient_quota":
        return PermanentError(f"HTTP 429: {message}", fatal=True)  # no money: every request would fail
    return status_error(status, message, headers, code, param, sent)


@contextlib.contextmanager
def sdk_errors(sdk: Any, key: Secrets, body: Collection[str] | None = None) -> Iterator[None]:
    """Map the lean path's error replies and an SDK's exceptions (`sdk`: the openai or anthropic module, whose
    exceptions have the same shape; None: no SDK) onto our policy, the key redacted from every message;
    `body` (what was sent) lets a 400 that names a sent field be told apart (base.py `status_error`)."""
    try:
        yield
    except ErrorReply as e:
        raise reply_error(e, key, body or ()) from None
    except UnicodeEncodeError as e:  # before ValueError: what we send, not the reply
        raise unencodable_prompt(e) from None
    except ValueError as e:  # not JSON, or not UTF-8
        raise MalformedReply(f"malformed reply: {redact(str(e), key)[:200]}") from None
    except Exception as e:
        if sdk is None:
            raise
        if isinstance(e, sdk.APIStatusError):
            inner = e.body.get("error", e.body) if isinstance(e.body, dict) else None
            inner = inner if isinstance(inner, dict) else {}
            message = inner["message"] if isinstance(inner.get("message"), str) else e.message
            code, param = _text(inner.get("code")), _text(inner.get("param"))
            raise _status(e.status_code, redact(message, key), e.response.headers, code, param, body or ()) from None
        if isinstance(e, sdk.APIConnectionError):  # APITimeoutError included
            raise sdk_connection_error(e, key) from None
        if isinstance(e, sdk.APIResponseValidationError):
            raise MalformedReply(f"malformed reply: {redact(str(e), key)[:200]}") from None
        raise


def sdk_connection_error(e: Exception, key: Secrets) -> RetryableError | PermanentError:
    """A failure an SDK reports as APIConnectionError: the transport's own error (transport.py) where it was ours,
    else (a timeout of the SDK's own) a retryable one."""
    cause = e.__cause__
    if isinstance(cause, RetryableError | PermanentError):
        return cause
    if "timeout" in type(e).__name__.lower():
        return RetryableError("request timed out")
    return RetryableError(f"connection error: {redact(str(e), key)}")
