"""Repeated samples (--repeats K): an item asked K times is one sample whose score is the --reduce of its replies.

How K replies combine, as a researcher averaging ratings would expect:
- the reducer (mean, median, or mode: the smallest of the most frequent values) runs over the replies that hold a
  number; an item is valid when at least one does, and invalid (the paper's seeded fallback draw, the same as with
  one reply) only when none does;
- a failed request among the K (a timeout, a 5xx) makes the item failed, with no prediction, as a failed request
  does with one reply: a rerun asks only the repeats that failed (each repeat is cached apart), and no score rests
  on fewer replies than asked without saying so;
- the invalid rate is counted both ways: per item (the run's `invalid_pct`, as always) and per reply
  (`repeats.invalid_replies_pct`); the per-item spread (the K values, their sd and range) is in samples.jsonl.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Sequence
from typing import Any

from harness.scoring.parsing import in_range
from harness.types import Scored


def reduce_values(values: Sequence[float], how: str) -> float:
    """One score from an item's valid replies (statistics' mean, median; mode: the smallest of the most frequent)."""
    match how:
        case "mean":
            return float(statistics.mean(values))  # exact (fractions): the mean of 3.46s is 3.46
        case "median":
            return float(statistics.median(values))
        case "mode":
            return float(min(statistics.multimode(values)))
    raise ValueError(f"unknown reducer {how!r}")


def combine(per_repeat: Sequence[Sequence[Scored]], how: str, label_range: tuple[float, float]) -> list[Scored]:
    """One Scored per item from the K repeats' (each scored alone, in the same item order), by the rules above."""
    out = []
    for reps in zip(*per_repeat, strict=True):
        first = reps[0]
        values = [s.parsed if s.valid and s.error is None else None for s in reps]
        valid = [v for v in values if v is not None]
        spread = {
            "values": values,
            "valid": len(valid),
            "sd": statistics.stdev(valid) if len(valid) > 1 else None,
            "range": max(valid) - min(valid) if valid else None,
            "outputs": [s.output for s in reps],
        }
        failed = next((s for s in reps if s.error is not None), None)
        usage = _usage_sum(reps)
        if failed is not None:
            out.append(_with(first, output=failed.output, parsed=None, valid=False, prediction=None,
                             error=failed.error, reason=failed.reason, repeats=spread, usage=usage))  # fmt: skip
        elif valid:
            score = reduce_values(valid, how)
            reason = "number" if in_range(score, label_range) else "out-of-range"
            out.append(_with(first, parsed=score, valid=True, prediction=score, reason=reason, repeats=spread,
                             usage=usage))  # fmt: skip
        else:  # no reply held a number: the item's seeded fallback draw, as every repeat drew it
            out.append(_with(first, repeats=spread, usage=usage))
    return out


def _with(s: Scored, **changes: Any) -> Scored:
    return dataclasses.replace(s, **changes)


def _usage_sum(reps: Sequence[Scored]) -> dict[str, int] | None:
    """The tokens of every repeat's reply together (what the item cost)."""
    usages = [s.usage for s in reps if s.usage is not None]
    if not usages:
        return None
    keys = dict.fromkeys(k for u in usages for k in u)  # every key any repeat reported (reasoning_tokens ...)
    return {k: sum(u.get(k, 0) for u in usages) for k in keys}


def repeat_metrics(samples: Sequence[Scored], k: int, how: str, temperature: float) -> dict[str, Any]:
    """metrics.json's "repeats": the invalid rate per reply beside the per-item one, and the items' spread."""
    spreads = [s.repeats for s in samples if s.repeats is not None and s.error is None]
    replies = sum(len(r["values"]) for r in spreads)
    invalid_replies = sum(v is None for r in spreads for v in r["values"])
    sds = [r["sd"] for r in spreads if r["sd"] is not None]
    ranges = [r["range"] for r in spreads if r["range"] is not None]
    return {
        "k": k,
        "reduce": how,
        "temperature": temperature,
        "replies": replies,
        "invalid_replies_pct": 100.0 * invalid_replies / replies if replies else None,
        "invalid_items_pct": 100.0 * sum(r["valid"] == 0 for r in spreads) / len(spreads) if spreads else None,
        "mean_sd": statistics.fmean(sds) if sds else None,
        "mean_range": statistics.fmean(ranges) if ranges else None,
        "items_disagreeing_pct": 100.0 * sum(x > 0 for x in ranges) / len(ranges) if ranges else None,
    }
