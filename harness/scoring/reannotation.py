"""Reading the JSON replies of Zhang et al. (2025)'s re-annotation prompts, and the labels they make; pure.

Both prompts ask for one JSON object and nothing else (Figure 3: improved_condition, justification; Figure 4:
rating, justification; "Do not use code blocks"). A reply is read with the json module: "json" when the whole
reply (surrounding whitespace aside) is one object, "embedded" when an object is found inside other text (a code
fence, a sentence before it), else "invalid-json"; an object without a usable field is "bad-field"; a request
that failed is "error". An object equal to one the prompt itself shows (its examples' replies) is "echo", as a
run's number copied from its prompt is (harness/scoring/parsing.py `is_echo`): the model repeated, it did not
rate. A rewritten condition holding what UTF-8 cannot encode (a lone surrogate, from a server's JSON "\\ud800") is
"unencodable": it could be neither sent in the rating prompt nor written to the labels file. Only "json" and
"embedded" give a value; each status is counted, none is dropped unseen.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

STATUSES = ("json", "embedded", "invalid-json", "bad-field", "unencodable", "echo", "error")
VALID = ("json", "embedded")
RATINGS = (1, 2, 3, 4, 5)
BRACKETS = re.compile(r"[][{}]")
OPENING = re.compile(r'\{\s*["}]')  # where a JSON object may begin: "{" then a key's quote, or "}"
WINDOW = 256  # characters of the first parse from each such place (grown while a parse runs out of it)
MAX_TRIES = 2_000  # places tried before a reply is called invalid-json: bounded time on any reply


@dataclass(frozen=True)
class Reading:
    """What one reply gave: the value (a rating 1-5 or a condition), the justification, and how it was read."""

    value: int | str | None
    justification: str | None
    status: str  # one of STATUSES

    @property
    def valid(self) -> bool:
        return self.status in VALID


def json_object(text: str | None) -> tuple[dict[str, Any] | None, str]:
    """(the reply's JSON object, "json" | "embedded"), or (None, "invalid-json"). Linear in the reply's length and
    never raising, whatever the server sent (issue 30: a 300 KB reply of braces took minutes, deep nesting crashed)."""
    if text is None:
        return None, "invalid-json"
    stripped = text.strip()
    try:
        whole = json.loads(stripped)
    except (ValueError, RecursionError):  # not one JSON value; nested deeper than the json module recurses
        whole = None
    if isinstance(whole, dict):
        return whole, "json"
    return _embedded(stripped)


def _embedded(text: str) -> tuple[dict[str, Any] | None, str]:
    """The first object that parses from a "{" that may open one ("{" then a key's quote or "}"), among the first
    MAX_TRIES such places. Each try parses a window of the text that grows only while the parse runs to its end,
    and a failed try resumes where the parse failed: every character is read a bounded number of times (an object
    nested in one that never closed is not looked for), and never a search from each "{" to the text's end."""
    decoder = json.JSONDecoder()
    at, tries = OPENING.search(text), 0
    while at is not None and tries < MAX_TRIES:
        tries += 1
        found, resume = _parse_at(decoder, text, at.start())
        if found is not None:
            return found, "embedded"
        at = OPENING.search(text, resume)
    return None, "invalid-json"


def _parse_at(decoder: json.JSONDecoder, text: str, start: int) -> tuple[dict[str, Any] | None, int]:
    """(the object that parses from `start`, or None and where to look next). The json module's error position
    costs a count over the text before it, so the text is parsed in a window, grown fourfold while the parse
    ran out of it (an unterminated string, or a failure within a literal's length of its end)."""
    size = WINDOW
    while True:
        window = text[start : start + size]
        try:
            found, _ = decoder.raw_decode(window)
        except json.JSONDecodeError as e:
            ran_out = e.msg.startswith("Unterminated string") or e.pos >= len(window) - 16
            if ran_out and start + size < len(text):
                size *= 4
                continue
            return None, start + e.pos  # past the "{" the window opens with: a failure is never at 0
        except RecursionError:  # nested deeper than the json module recurses: skip what those brackets hold
            return None, _after_brackets(text, start)
        return found, start  # what parses from a "{" is an object


def _after_brackets(text: str, start: int) -> int:
    """Where the brackets opened at `start` all close again (or the text's end), counting blindly through strings.
    In chunks: one whose closers cannot bring the count down to 0 is passed over with four C-speed counts."""
    depth, at = 0, start
    while at < len(text):
        chunk = text[at : at + 4096]
        closers = chunk.count("}") + chunk.count("]")
        if depth - closers > 0:  # cannot reach 0 inside this chunk
            depth += chunk.count("{") + chunk.count("[") - closers
        else:
            for m in BRACKETS.finditer(chunk):
                depth += 1 if m.group() in "{[" else -1
                if depth <= 0:
                    return at + m.end()
        at += len(chunk)
    return len(text)


def prompt_objects(prompt: str) -> list[dict[str, Any]]:
    """The JSON objects the prompt shows (its examples' replies, the requested format), in order."""
    decoder, found, start = json.JSONDecoder(), [], prompt.find("{")
    while start != -1:
        try:
            obj, end = decoder.raw_decode(prompt, start)
        except (json.JSONDecodeError, RecursionError):  # a prompt's own text is bounded, but never trusted
            obj, end = None, start  # the next "{" after this one (below)
        if isinstance(obj, dict):
            found.append(obj)
        start = prompt.find("{", max(end, start + 1))
    return found


def _justification(obj: dict[str, Any]) -> str | None:
    value = obj.get("justification")
    return value if isinstance(value, str) else None


def _reply_object(text: str | None, error: str | None, prompt: str | None) -> tuple[dict[str, Any], str] | Reading:
    """The reply's JSON object and how it was found (json_object), or the Reading that ends it: an error, no
    object, or one of the prompt's own objects echoed back."""
    if error is not None:
        return Reading(None, None, "error")
    obj, how = json_object(text)
    if obj is None:
        return Reading(None, None, how)
    if prompt is not None and obj in prompt_objects(prompt):
        return Reading(None, _justification(obj), "echo")
    return obj, how


def read_rating(text: str | None, error: str | None = None, prompt: str | None = None) -> Reading:
    """Figure 4's reply: "rating" must be a JSON number equal to one of 1-5 (4 or 4.0; not "4", not true), in an
    object that is not one of the prompt's own (`prompt`: the text sent)."""
    found = _reply_object(text, error, prompt)
    if isinstance(found, Reading):
        return found
    obj, how = found
    rating = obj.get("rating")
    if isinstance(rating, bool) or not isinstance(rating, int | float) or rating not in RATINGS:
        return Reading(None, _justification(obj), "bad-field")
    return Reading(int(rating), _justification(obj), how)


def read_condition(text: str | None, error: str | None = None, prompt: str | None = None) -> Reading:
    """Figure 3's reply: "improved_condition" must be a non-empty string (kept as one line) that UTF-8 can encode."""
    found = _reply_object(text, error, prompt)
    if isinstance(found, Reading):
        return found
    obj, how = found
    condition = obj.get("improved_condition")
    if not isinstance(condition, str) or not condition.strip():
        return Reading(None, _justification(obj), "bad-field")
    try:
        condition.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: the rating prompt could not be sent, the labels file not written
        return Reading(None, _justification(obj), "unencodable")
    return Reading(" ".join(condition.split()), _justification(obj), how)


def counts(readings: Sequence[Reading]) -> dict[str, Any]:
    """How many replies had each status, and the invalid share (everything but json/embedded; errors apart)."""
    by = {s: sum(r.status == s for r in readings) for s in STATUSES}
    answered = len(readings) - by["error"]
    invalid = answered - by["json"] - by["embedded"]
    return {
        "replies": len(readings),
        **by,
        "invalid_pct": round(100 * invalid / answered, 2) if answered else None,
        # the prompt's own rule: the reply is the object and nothing else
        "not_bare_json_pct": round(100 * (answered - by["json"]) / answered, 2) if answered else None,
    }


def combined_label(ratings: Sequence[int | None], original: float | None = None) -> int | None:
    """The label written for one item from one model's repeat ratings (and the original label, when given):
    merged_label with this model alone."""
    return merged_label([ratings], original)


def merged_label(per_model: Sequence[Sequence[int | None]], original: float | None = None) -> int | None:
    """Zhang et al. 2025's V() (§2.2, Table 11): the arithmetic mean of the human label and each model's rating,
    each counted once, rounded to the nearest integer, halves up. A model's rating is the mean of its valid repeats
    (`--repeats N` asks it N times: one vote, not N, so the human label keeps its weight); a model with no valid
    rating has no vote; None when no model has one."""
    votes = [sum(v) / len(v) for v in ([float(r) for r in m if r is not None] for m in per_model) if v]
    if not votes:
        return None
    if original is not None:
        votes.append(float(original))
    return math.floor(sum(votes) / len(votes) + 0.5)


def merged_labels(
    per_model: Sequence[Mapping[str, Sequence[int | None]]], original: Mapping[str, float | None]
) -> dict[str, int | None]:
    """Zhang et al. 2025's V(y_human + y_GPT-4o + y_Claude) (§2.2, Table 11) for every item of `original`: each
    model's ratings of an item (its repeats; an item a model did not rate: no vote) and the item's original label,
    through merged_label. Items in `original` order; None where no model gave a valid rating."""
    return {uid: merged_label([m.get(uid, ()) for m in per_model], label) for uid, label in original.items()}
