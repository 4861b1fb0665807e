"""Constrained answers (`--constrain`): the backend's own mechanism forces the reply into the label scale.

A protocol of its own, never the paper's: the answer is one integer of the scale (C-STS 1-5, STS-B 0-5),
as a JSON object `{"score": N}` where the backend enforces a JSON schema (OpenAI `response_format`,
OpenAI-compatible servers, Anthropic's forced tool call) or as the bare integer where it restricts the
tokens (vLLM's choice, hf's first-token restriction). A backend may ignore the constraint (a server that
drops `response_format`), so the reply is still parsed and the invalid rate still measured: a reply is valid
only when it is exactly one of those two shapes (a bare integer, or a JSON object with one number `score`).
Any reply is read in time linear in its length and never raises (issue 30): a number no float holds, or JSON
nested too deep for the json module, is simply not a score.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

SCHEMA_NAME = "similarity_score"
FIELD = "score"
_BARE = re.compile(r"^\s*(\d+)\s*$")  # what a choice or token restriction over the integers can give


def scale_values(label_range: tuple[float, float]) -> tuple[int, ...]:
    """The integers of the label scale: (1, 2, 3, 4, 5) for C-STS, (0, ..., 5) for STS-B."""
    lo, hi = label_range
    return tuple(range(math.ceil(lo), math.floor(hi) + 1))


def json_schema(values: tuple[int, ...]) -> dict[str, Any]:
    """The answer's JSON schema: one required integer field restricted to the scale (strict-mode legal:
    every property required, no additional properties)."""
    return {
        "type": "object",
        "properties": {FIELD: {"type": "integer", "enum": list(values)}},
        "required": [FIELD],
        "additionalProperties": False,
    }


def response_format(values: tuple[int, ...]) -> dict[str, Any]:
    """OpenAI's `response_format` for the scale (Structured Outputs, strict), as OpenAI-compatible servers take it."""
    return {"type": "json_schema", "json_schema": {"name": SCHEMA_NAME, "strict": True, "schema": json_schema(values)}}


def gbnf(values: tuple[int, ...]) -> str:
    """A llama.cpp GBNF grammar whose only sentences are the scale's integers (`--constrain grammar`)."""
    return "root ::= " + " | ".join(f'"{v}"' for v in values)


def parse_constrained(text: str | None) -> float | None:
    """The score of a constrained reply: `{"score": N}` (JSON, N a number) or a bare integer; None otherwise
    (the backend did not hold to the constraint: "3.4", "The score is 4"). Out-of-scale values are returned and
    flagged as out of range by the reason code, as for the paper's rule."""
    if not text:
        return None
    bare = _BARE.match(text)
    if bare:
        return _finite(bare.group(1))
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # not JSON; an integer of over 4,300 digits; `[` nested ~1,000 deep
        return None
    value = data.get(FIELD) if isinstance(data, dict) and len(data) == 1 else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return _finite(value)


def _finite(value: str | int | float) -> float | None:
    """The value as a finite float; None for one no float holds (an integer of 309+ digits, which `float` of an
    int refuses with OverflowError and of a string makes inf): never a score, however far off the scale."""
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None
