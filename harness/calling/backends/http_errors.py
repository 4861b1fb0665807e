"""Error replies of the API backends under our retry policy (http.py's lean path and the SDKs' typed calls).

An error status is an `ErrorReply` (status, headers, body and its `error` fields); `reply_error` classifies it by
our own policy (base.py `status_error`); `sdk_errors` maps those and the SDKs' own exceptions the same way, the key
redacted from every message.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Collection, Iterator, Mapping
from typing import Any

from harness.calling.backends.base import (
    MalformedReply,
    PermanentError,
    RetryableError,
    status_error,
    unencodable_prompt,
)
from harness.calling.redaction import Secrets, redact


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
