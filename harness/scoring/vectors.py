"""Embedding vectors read from what an embedding backend stored (issues 30, 41): the one door every embedding passes
before a cosine, a clustering or an isotropy uses it (--variant case, qa-embed, `run_eval.py errors`).

A server may send anything where a vector belongs: a string, `null`, a nested list, NaN or Infinity, a vector of
another length than the others, or four million numbers. Each is a reason code here, counted and stored with the
item, never an exception (which would end every rerun from the cache in the same traceback) and never a number: an
item whose vector is refused has no prediction, and says why. The checks are cheap: one regular expression over the
text (no JSON decoder sees a string, an object or a nesting), one json pass, one numpy pass.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from collections.abc import Mapping, Sequence

from harness.types import Completion, Request

MAX_DIM = 65_536  # numbers: real models have up to a few thousand (text-embedding-3-large: 3,072; 7B LLMs: 4,096)
MAX_TEXT = MAX_DIM * 32  # characters of a JSON list of MAX_DIM numbers, each written as long as a float may be
UNUSABLE = "unusable-embedding"  # a Completion's `malformed` code, before the reason code (embeddings.py)
# Reason codes (one per item whose vector is refused)
NOT_A_LIST = "not-a-list"  # a string, null, an object, true, a nested list: not a flat JSON list of numbers
EMPTY = "empty"
NOT_FINITE = "not-finite"  # NaN, Infinity, a number no float holds, a squared length no float holds
TOO_LONG = "too-long"  # more than MAX_DIM numbers (or a text too long to hold only that many)
OTHER_LENGTH = "other-length"  # a finite vector of another length than most (`common_length`)
_NUMBERS = re.compile(r"[\s\[\]0-9eE.+,-]*")  # what a JSON list of numbers is written with


def read_vector(text: str | None) -> list[float] | str:
    """The vector an embedding backend stored as a JSON list (embeddings.py), or the reason code it cannot be one."""
    if text is None or not _NUMBERS.fullmatch(text[:MAX_TEXT]):
        return NOT_A_LIST
    if len(text) > MAX_TEXT:
        return TOO_LONG
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return NOT_A_LIST
    return check_vector(value)


def check_vector(value: object) -> list[float] | str:
    """A flat, non-empty list of at most MAX_DIM finite numbers whose squared length a float holds with room to
    spare (so distances between two stay finite); else the reason code."""
    if not isinstance(value, list | tuple):
        return NOT_A_LIST
    if not value:
        return EMPTY
    if len(value) > MAX_DIM:  # before looking at each number: four million of them are refused at once
        return TOO_LONG
    if not all(type(x) in (int, float) for x in value):
        return NOT_A_LIST
    import numpy as np  # here: a dry run of any variant loads no numpy

    try:
        vector = np.array(value, dtype=float)
    except OverflowError:  # an integer of 309+ digits
        return NOT_FINITE
    if not np.isfinite(vector).all():
        return NOT_FINITE
    with np.errstate(over="ignore"):
        square = float(vector @ vector)
    # |a - b|^2 <= 4 max(|a|^2, |b|^2): every distance between two vectors that pass stays finite
    return vector.tolist() if square <= sys.float_info.max / 4 else NOT_FINITE  # type: ignore[no-any-return]


def vector_from(text: str | None) -> list[float] | None:
    """read_vector's vector, or None where it has a reason code."""
    got = read_vector(text)
    return None if isinstance(got, str) else got


def finite_vector(value: object) -> list[float] | None:
    """check_vector's vector, or None where it has a reason code."""
    got = check_vector(value)
    return None if isinstance(got, str) else got


def common_length(vectors: Mapping[str, Sequence[float]]) -> int:
    """The length most vectors have (ties: the longer); 0 for none."""
    lengths = Counter(len(v) for v in vectors.values())
    return max(lengths, key=lambda n: (lengths[n], n), default=0)


def read_all(texts: Mapping[str, str | None]) -> tuple[dict[str, list[float]], dict[str, str]]:
    """Every stored embedding read (text embedded -> what was stored): the vectors that can be compared, all of
    the common length, and the reason code of each of the others."""
    vectors, reasons = {}, {}
    for key, text in texts.items():
        got = read_vector(text)
        if isinstance(got, str):
            reasons[key] = got
        else:
            vectors[key] = got
    dim = common_length(vectors)
    reasons |= {k: OTHER_LENGTH for k, v in vectors.items() if len(v) != dim}
    return {k: v for k, v in vectors.items() if len(v) == dim}, reasons


def usable(vectors: Mapping[str, Sequence[float] | None]) -> dict[str, list[float]]:
    """The vectors that can be compared: finite (check_vector) and of the common length, so one reply of another
    length, or empty, cannot break the cosines and the clustering."""
    good = {t: v for t, v in ((t, finite_vector(v)) for t, v in vectors.items()) if v is not None}
    dim = common_length(good)
    return {t: v for t, v in good.items() if len(v) == dim}


def embedded(
    requests: Sequence[Request], completions: Mapping[str, Completion]
) -> tuple[dict[str, list[float]], dict[str, str]]:
    """(text -> vector) for every request whose stored answer is a usable vector, (text -> why not) for the others:
    the request's error, or the reason code of a vector refused at the door (embeddings.py) or here."""
    stored, errors = {}, {}
    for r in requests:
        c = completions[r.id]
        if c.text:
            stored[r.prompt] = c.text
        else:
            errors[r.prompt] = c.error or c.malformed or "no embedding"
    vectors, reasons = read_all(stored)
    return vectors, errors | {text: f"{UNUSABLE}: {why}" for text, why in reasons.items()}


def unusable_counts(errors: Mapping[str, str]) -> dict[str, int]:
    """How many embeddings were refused, by reason code (metrics.json's `unusable_embeddings`)."""
    prefix = f"{UNUSABLE}: "
    return dict(sorted(Counter(e.removeprefix(prefix) for e in errors.values() if e.startswith(prefix)).items()))
