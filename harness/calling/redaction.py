"""Secrets out of everything the harness stores or prints (issues 30, 41): a server may echo the API key, or a proxy
its Proxy-Authorization, in any string of its reply, the `model` and `finish_reason` fields included, and not only
as it was sent.

The backends know the secrets (the key, the proxy's credentials and those in a --base-url: transport.py `route_secrets`)
and apply `redact` to every message they build and `redact_completion` to every reply where it enters
(`completion_from`); dispatch applies `redact_completion` again to every Completion it hands on (errors built from
messages, answers from the cache). A secret is redacted in every form the harness can know of (`_pattern`): as sent,
URL-encoded or JSON-escaped (any of its characters, in either case of hex), base64-encoded whatever precedes it (so
also inside `Bearer <key>` or a basic-auth `user:key` encoded whole), and in pieces: any run of FRAGMENT or more of
its characters (a key split across two fields of a JSON error, or cut by a length cap).
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import re
import urllib.parse
from collections.abc import Sequence
from typing import Any

from harness.types import Completion

PLACEHOLDER_KEY = "EMPTY"  # sent to your own server (--base-url) when no key is set; never redacted
Secrets = str | Sequence[str] | None  # the API key, or the key and the proxy's credentials (transport.py route_secrets)
REDACTED = "[redacted]"
# Every string a server puts in a Completion: the harness stores them (cache, samples.jsonl) and shows them (runs.csv,
# report.md, the report's page, warning lines).
_SERVER_FIELDS = ("text", "error", "finish_reason", "refusal", "served_model", "reasoning", "malformed", "raw")
MIN_SECRET = 4  # characters: shorter strings are not looked for (they would redact ordinary words)
FRAGMENT = 8  # characters: a run of a secret this long, anywhere, is taken for a piece of it
# A query parameter of a --base-url whose name says it carries a credential (`?api-key=`, `?token=`, `?sig=`).
_CREDENTIAL_PARAM = re.compile(r"key|token|secret|passw|auth|sig|credential|session", re.IGNORECASE)


def secrets_of(secret: Secrets) -> tuple[str, ...]:
    """The secrets worth looking for, longest first (so `user:password` goes before `password`)."""
    items = (secret,) if isinstance(secret, str) or secret is None else tuple(secret)
    return _kept(items)


@functools.lru_cache(maxsize=64)  # every field of every reply asks again, with the backend's same tuple
def _kept(items: tuple[str | None, ...]) -> tuple[str, ...]:
    kept = {s for s in items if s and len(s) >= MIN_SECRET and s != PLACEHOLDER_KEY}
    return tuple(sorted(kept, key=lambda s: (-len(s), s)))


def url_secrets(url: str | None) -> tuple[str, ...]:
    """The credentials a URL carries: its user and password (`https://user:pass@host`), as written and decoded, and
    the value of every query parameter named like a credential (`?api-key=...`); treated as the key is."""
    if not url:
        return ()
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return ()
    found: list[str] = []
    userinfo = parts.netloc.rpartition("@")[0]
    if userinfo:  # `user:password`, or a token alone as the user (`https://TOKEN@host`)
        written = (userinfo, userinfo.partition(":")[2] or userinfo)
        found += [*written, *(urllib.parse.unquote(p) for p in written)]
    for name, value in urllib.parse.parse_qsl(parts.query):
        if _CREDENTIAL_PARAM.search(name):
            found += [value, urllib.parse.quote(value, safe=""), urllib.parse.quote_plus(value)]
    return secrets_of(found)


def _hex(value: int) -> str:
    """Two hex digits as a pattern, either case: 0x2f -> `2[fF]`."""
    return "".join(f"[{d.lower()}{d.upper()}]" if d.isalpha() else d for d in f"{value:02x}")


def _char(c: str) -> str:
    """A pattern for one character of a secret as it may be written: as is, percent-encoded, JSON-escaped."""
    units = c.encode("utf-16-be")  # JSON's \\u escapes: UTF-16 code units, a surrogate pair past U+FFFF
    json_escaped = "".join(rf"\\u{_hex(units[i])}{_hex(units[i + 1])}" for i in range(0, len(units), 2))
    forms = [re.escape(c), "".join(f"%{_hex(b)}" for b in c.encode("utf-8")), json_escaped]
    if c == "/":
        forms.append(r"\\/")
    return "(?:" + "|".join(forms) + ")"


def base64_cores(secret: str) -> tuple[str, ...]:
    """What every base64 encoding of a text holding `secret` contains, whatever precedes it (`Bearer `, `user:`):
    for each of the three alignments, the characters that encode only the secret's bits (standard and URL-safe
    alphabets; those shorter than FRAGMENT characters are left out), and the secret's own encoding whole."""
    data = secret.encode("utf-8")
    cores = set()
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + data).decode("ascii")
        # a character holds 6 bits: those from the secret's first bit (8 * offset: the character ceil(8 * offset / 6))
        # to its last, and no other
        start, end = (0, 2, 3)[offset], 8 * (offset + len(data)) // 6
        core = encoded[start:end]
        if len(core) >= FRAGMENT:
            cores |= {core, core.replace("+", "-").replace("/", "_")}
    alone = base64.b64encode(data).decode("ascii")  # the secret encoded by itself: all of it, its end too
    cores |= {form for a in (alone, alone.replace("+", "-").replace("/", "_")) for form in (a, a.rstrip("="))}
    return tuple(sorted(cores))


@dataclasses.dataclass(frozen=True)
class _Forms:
    encoded: re.Pattern[str]  # every secret with each character as is, percent-encoded or JSON-escaped
    literal: tuple[str, ...]  # written as they are: the secrets (the shorter ones), their base64 cores
    grams: tuple[str, ...]  # every FRAGMENT-long piece of a secret


@functools.lru_cache(maxsize=64)
def _forms(secrets: tuple[str, ...]) -> _Forms:
    encoded = re.compile("|".join("".join(_char(c) for c in s) for s in secrets))
    literal = tuple(sorted({*secrets, *(c for s in secrets for c in base64_cores(s))}, key=lambda c: (-len(c), c)))
    grams = tuple(sorted({s[i : i + FRAGMENT] for s in secrets for i in range(len(s) - FRAGMENT + 1)}))
    return _Forms(encoded, literal, grams)


def _without_pieces(text: str, grams: Sequence[str]) -> str:
    """`text` with every run made of FRAGMENT-long pieces of a secret replaced by one REDACTED."""
    spans = []
    for gram in grams:  # str.find per piece, in C: a 1 MB reply is searched in a few milliseconds
        at = text.find(gram)
        while at >= 0:
            spans.append((at, at + FRAGMENT))
            at = text.find(gram, at + 1)
    if not spans:
        return text
    out: list[str] = []
    kept_from = 0
    for start, end in sorted(spans):
        if start > kept_from or not out:  # a new run: what came before it is kept
            out += [text[kept_from:start], REDACTED]
        kept_from = max(kept_from, end)
    out.append(text[kept_from:])
    return "".join(out)


def redact(text: str, secret: Secrets) -> str:
    """Remove secrets, in every form they may take, from a message or reply before it is recorded or printed
    (providers echo bad keys back, proxies their Proxy-Authorization)."""
    kept = secrets_of(secret)
    if not kept:
        return text
    forms = _forms(kept)
    if "%" in text or "\\" in text:  # only then can an encoded form be there: the pattern is slower than `in`
        text = forms.encoded.sub(REDACTED, text)
    for literal in forms.literal:
        if literal in text:
            text = text.replace(literal, REDACTED)
    return _without_pieces(text, forms.grams) if len(text) >= FRAGMENT else text


def redact_all(value: Any, secret: Secrets) -> Any:
    """A JSON-like value (dicts, lists, strings) with `redact` applied to every string in it, keys included."""
    if not secrets_of(secret):
        return value
    if isinstance(value, str):
        return redact(value, secret)
    if isinstance(value, dict):
        return {redact_all(k, secret): redact_all(v, secret) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(redact_all(v, secret) for v in value)
    return value


def redact_completion(completion: Completion, secret: Secrets) -> Completion:
    """The Completion with the secrets taken out of every server-supplied string (the answer and its thought, the
    refusal, the error, and the `model` and `finish_reason` the server echoed, which any server may fill with
    what it was sent, and a malformed reply's body): applied where a reply enters (each backend's
    `completion_from`, for one-by-one and batch answers alike) and where every Completion passes (dispatch
    `finish`: errors, and cached answers)."""
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
    grams = {prompt[i : i + n] for i in range(len(prompt) - n + 1)}
    out: list[str] = []
    kept_from = covered_to = 0
    for i in range(len(message) - n + 1):
        if message[i : i + n] in grams:
            if not out or i > covered_to:  # a new quote: what came before it is the server's
                out.append(message[kept_from:i])
                out.append(PROMPT_QUOTED)
            covered_to = i + n
            kept_from = covered_to
    if not out:
        return message
    out.append(message[kept_from:])
    return "".join(out)
