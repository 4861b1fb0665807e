"""Errors of the OpenAI backends mapped onto our retry policy (harness/calling/backends/base.py): error replies of
the lean path (harness/calling/backends/http.py `ErrorReply`) and the openai SDK's public exceptions, for its
typed calls (embeddings, the Batch API), whose connection failures are already ours (transport.py)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import openai

from harness.calling.backends.base import MalformedReply, PermanentError, status_error, unencodable_prompt
from harness.calling.backends.http import ErrorReply, reply_error, sdk_connection_error
from harness.calling.redaction import Secrets, redact


@contextlib.contextmanager
def sdk_errors(key: Secrets, body: dict[str, Any] | None = None) -> Iterator[None]:
    """Map the SDK's exceptions onto ours (retry or fail fast), with the key redacted from every message."""
    try:
        yield
    except ErrorReply as e:
        raise reply_error(e, key, body or ()) from None
    except openai.APIStatusError as e:
        message = redact(_provider_message(e), key)
        if e.status_code == 429 and _field(e, "code") == "insufficient_quota":
            raise PermanentError(f"HTTP 429: {message}", fatal=True) from None  # no money: every request fails
        raise status_error(
            e.status_code, message, e.response.headers, _field(e, "code"), _field(e, "param"), body or ()
        ) from None
    except openai.APIConnectionError as e:  # APITimeoutError included
        raise sdk_connection_error(e, key) from None
    except UnicodeEncodeError as e:  # before ValueError: what we send, not the reply
        raise unencodable_prompt(e) from None
    except (openai.APIResponseValidationError, ValueError) as e:  # ValueError: not JSON, or not UTF-8
        raise MalformedReply(f"malformed reply: {redact(str(e), key)[:200]}") from None


def _provider_message(e: openai.APIStatusError) -> str:
    body = e.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return inner["message"]
    return e.message


def _field(e: openai.APIStatusError, name: str) -> str | None:
    body = e.body
    inner = body.get("error", body) if isinstance(body, dict) else None
    value = inner.get(name) if isinstance(inner, dict) else None
    return str(value) if value is not None else None
