"""Secrets out of everything the harness stores or prints (issue 30): a server may echo the API key, or a proxy its
Proxy-Authorization, in any string of its reply, the `model` and `finish_reason` fields included.

The backends know the secrets (the key, the proxy credentials: http.py `route_secrets`) and apply `redact` to every
message they build and `redact_completion` to every reply where it enters (`completion_from`); dispatch applies
`redact_completion` again to every Completion it hands on (errors built from messages, answers from the cache).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from harness.types import Completion

PLACEHOLDER_KEY = "EMPTY"  # sent to your own server (--base-url) when no key is set; never redacted
Secrets = str | Sequence[str] | None  # the API key, or the key and the proxy's credentials (http.py route_secrets)
REDACTED = "[redacted]"
# Every string a server puts in a Completion: the harness stores them (cache, samples.jsonl) and shows them (runs.csv,
# report.md, the report's page, warning lines).
_SERVER_FIELDS = ("text", "error", "finish_reason", "refusal", "served_model", "reasoning")


def secrets_of(secret: Secrets) -> tuple[str, ...]:
    """The secrets worth looking for, longest first (so `user:password` goes before `password`)."""
    items = (secret,) if isinstance(secret, str) or secret is None else secret
    kept = {s for s in items if s and len(s) >= 4 and s != PLACEHOLDER_KEY}
    return tuple(sorted(kept, key=lambda s: (-len(s), s)))


def redact(text: str, secret: Secrets) -> str:
    """Remove secrets from a message or reply before it is recorded or printed (providers echo bad keys back,
    proxies their Proxy-Authorization)."""
    for s in secrets_of(secret):
        if s in text:
            text = text.replace(s, REDACTED)
    return text


def redact_completion(completion: Completion, secret: Secrets) -> Completion:
    """The Completion with the secrets taken out of every server-supplied string (the answer and its thought, the
    refusal, the error, and the `model` and `finish_reason` the server echoed, which any server may fill with
    what it was sent): applied where a reply enters (each backend's `completion_from`, for one-by-one and batch
    answers alike) and where every Completion passes (dispatch `finish`: errors, and cached answers)."""
    kept = secrets_of(secret)
    if not kept:
        return completion
    changed: dict[str, Any] = {}
    for name in _SERVER_FIELDS:
        value = getattr(completion, name)
        if isinstance(value, str) and (clean := redact(value, kept)) != value:
            changed[name] = clean
    return dataclasses.replace(completion, **changed) if changed else completion


QUOTE_MIN = 12  # characters: a run of the prompt at least this long inside an error message is a quote of it
PROMPT_QUOTED = "[prompt text]"


def without_prompt(message: str, prompt: str) -> str:
    """An error message with every quote of its request's prompt (each run of QUOTE_MIN or more characters that the
    prompt holds too) replaced by PROMPT_QUOTED: a server whose 400 quotes what it was sent (a validation error's
    `input`) would otherwise put the prompt's sentences and conditions, C-STS's among them, into the warning line,
    metrics.json and the report. The prompt itself is in samples.jsonl; the message keeps the server's own words."""
    n = QUOTE_MIN
    if len(message) < n or len(prompt) < n:
        return message
    grams = {prompt[i : i + n] for i in range(len(prompt) - n + 1)}
    out, kept_from, covered_to = [], 0, -1
    for i in range(len(message) - n + 1):
        if message[i : i + n] in grams:
            if i > covered_to:  # a new quote: what came before it is the server's
                out.append(message[kept_from:i])
                out.append(PROMPT_QUOTED)
            covered_to = i + n
            kept_from = covered_to
    if not out:
        return message
    out.append(message[kept_from:])
    return "".join(out)
