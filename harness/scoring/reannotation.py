"""Reading the JSON replies of Zhang et al. (2025)'s re-annotation prompts, and the labels they make; pure.

Both prompts ask for one JSON object and nothing else (Figure 3: improved_condition, justification; Figure 4:
rating, justification; "Do not use code blocks"). A reply is read with the json module: "json" when the whole
reply (surrounding whitespace aside) is one object, "embedded" when an object is found inside other text (a code
fence, a sentence before it), else "invalid-json"; an object without a usable field is "bad-field"; a request
that failed is "error". An object equal to one the prompt itself shows (its examples' replies) is "echo", as a
run's number copied from its prompt is (harness/scoring/parsing.py `is_echo`): the model repeated, it did not rate.
Only "json" and "embedded" give a value; each status is counted, none is dropped unseen.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

STATUSES = ("json", "embedded", "invalid-json", "bad-field", "echo", "error")
VALID = ("json", "embedded")
RATINGS = (1, 2, 3, 4, 5)


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
    """(the reply's JSON object, "json" | "embedded"), or (None, "invalid-json")."""
    if text is None:
        return None, "invalid-json"
    stripped = text.strip()
    try:
        whole = json.loads(stripped)
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, dict):
        return whole, "json"
    decoder = json.JSONDecoder()
    start = stripped.find("{")
    while start != -1:  # the first position an object parses from (replies are short: max_tokens bounds them)
        try:
            found, _ = decoder.raw_decode(stripped, start)
        except json.JSONDecodeError:
            found = None
        if isinstance(found, dict):
            return found, "embedded"
        start = stripped.find("{", start + 1)
    return None, "invalid-json"


def prompt_objects(prompt: str) -> list[dict[str, Any]]:
    """The JSON objects the prompt shows (its examples' replies, the requested format), in order."""
    decoder, found, start = json.JSONDecoder(), [], prompt.find("{")
    while start != -1:
        try:
            obj, end = decoder.raw_decode(prompt, start)
        except json.JSONDecodeError:
            obj, end = None, start + 1
        if isinstance(obj, dict):
            found.append(obj)
        start = prompt.find("{", max(end, start + 1))
    return found


def _justification(obj: dict[str, Any]) -> str | None:
    value = obj.get("justification")
    return value if isinstance(value, str) else None


def read_rating(text: str | None, error: str | None = None, prompt: str | None = None) -> Reading:
    """Figure 4's reply: "rating" must be a JSON number equal to one of 1-5 (4 or 4.0; not "4", not true), in an
    object that is not one of the prompt's own (`prompt`: the text sent)."""
    if error is not None:
        return Reading(None, None, "error")
    obj, how = json_object(text)
    if obj is None:
        return Reading(None, None, how)
    if prompt is not None and obj in prompt_objects(prompt):
        return Reading(None, _justification(obj), "echo")
    rating = obj.get("rating")
    if isinstance(rating, bool) or not isinstance(rating, int | float) or rating not in RATINGS:
        return Reading(None, _justification(obj), "bad-field")
    return Reading(int(rating), _justification(obj), how)


def read_condition(text: str | None, error: str | None = None, prompt: str | None = None) -> Reading:
    """Figure 3's reply: "improved_condition" must be a non-empty string (kept as one line)."""
    if error is not None:
        return Reading(None, None, "error")
    obj, how = json_object(text)
    if obj is None:
        return Reading(None, None, how)
    if prompt is not None and obj in prompt_objects(prompt):
        return Reading(None, _justification(obj), "echo")
    condition = obj.get("improved_condition")
    if not isinstance(condition, str) or not condition.strip():
        return Reading(None, _justification(obj), "bad-field")
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
    """The label written for one item: the mean of its valid repeat ratings (and the original label, when given:
    Zhang et al.'s V(y_human + y_LLM), §2.2), rounded to the nearest integer, halves up; None without a rating."""
    values = [float(r) for r in ratings if r is not None]
    if not values:
        return None
    if original is not None:
        values.append(float(original))
    return math.floor(sum(values) / len(values) + 0.5)
