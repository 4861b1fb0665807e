"""Reading an API's 200 reply without ever losing it (issue 30): a reply that came back was paid for.

The body is read whole (bounded: transport.py), then `json.loads`, then the backend's `completion_from`. A body
that is not JSON (cut off, not UTF-8) stays a `MalformedReply`, retried a few times as before: that is a broken
delivery, not an answer. Anything else that fails once the JSON is in hand (a nesting too deep for the decoder, a
number no float holds, a field no rule foresaw) is not an exception that turns the paid answer into an uncached
error, bought again by every rerun: the reply becomes a Completion marked `malformed` with a reason code, its body
kept as received in `raw` (key redacted, capped), cached like any answer and scored invalid (reason "malformed").
That includes JSON of no answer's shape (a list, an object without `choices`: base.py NotAnAnswer).

One 200 is no answer: a gateway's error report, `{"error": {...}}` with no answer beside it. OpenRouter documents
that once the model has started, an error comes with status 200 and the status it stands for in `error.code` (502:
the model is down, 429, 408); no answer was made, so none is kept. It is read as that status would be (base.py
`status_error`: 408/429/5xx retried, a 4xx this request's error or the run's); without a status, as an unreadable
reply (retried a few times, then that request's error, never cached).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from harness.calling.backends.base import MalformedReply, PermanentError, RetryableError, clean_reply, status_error
from harness.calling.redaction import Secrets, redact
from harness.types import Completion, RateLimit

if TYPE_CHECKING:  # not imported to run: the batch path reads with `unreadable` without loading aiohttp
    from harness.calling.backends.http import Received

TOO_LARGE = "too-large"  # a body over --max-reply-mb (transport.py MAX_REPLY_MB)
TOO_DEEP = "too-deep"  # JSON nested deeper than Python's decoder goes (RecursionError)
UNREADABLE = "unreadable"  # the JSON parsed, but reading the answer out of it failed
# The cap a too-large verdict was read under, as bounded.py's ReplyTooLarge says it ("... is over 32 MB (...")
_CAP = re.compile(rf"^{TOO_LARGE}: .*? over (\S+) MB\b")


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
