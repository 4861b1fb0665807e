"""Turn model text into a score by the reference rule, and draw the seeded fallback for invalid outputs."""

from __future__ import annotations

import re

from harness.fewshot import query_rng

# Deshpande et al. 2023, App. A.3: the output is stripped of non-numeric characters and errant
# punctuation before the cast. In effect the first run of digits with an optional decimal part
# wins; a sign is dropped ("-1" -> 1.0) and a leading dot is ignored (".5" -> 5.0), as the
# reference code does (../shared/golden/parse_cases.jsonl).
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def parse_score(text: str | None) -> float | None:
    """The first number in the text, or None when there is none (an invalid output)."""
    if not text:
        return None
    match = _NUMBER.search(text)
    return float(match.group()) if match else None


def fallback_score(seed: int, query_id: str, label_range: tuple[float, float]) -> float:
    """Deshpande et al. 2023, App. A.3: invalid -> y ~ U[lo, hi], seeded per (seed, query) for reruns."""
    lo, hi = label_range
    return query_rng(seed, "fallback", query_id).uniform(lo, hi)


def in_range(value: float, label_range: tuple[float, float]) -> bool:
    return label_range[0] <= value <= label_range[1]
