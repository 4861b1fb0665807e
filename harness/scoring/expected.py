"""Expected-score scoring (`--scoring expected`): a prediction from the first output token's probabilities.

Instead of parsing the generated text, weight each valid score by the probability the model gives its token
at the first output position and take the mean, renormalised over the valid scores (C-STS 1-5, STS-B 0-5).
Every answered query gets a prediction, so nothing is invalid; the result is a metric of its own
(`spearman_expected`, ...), reported beside the paper's parsed one and never mixed with it.

Backends report the first position as {score text: probability}, summed over the tokens whose text,
stripped of whitespace, is that integer ("4", " 4", "▁4" all count for 4). Integers 0-10 are collected so
one backend answer serves either scale; which of them count is decided here, from the label range.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from harness.scoring.metrics import pearson, spearman
from harness.types import Scored

MAX_SCORE_TOKEN = 10
LOW_MASS = 0.5  # below this average first-token mass on valid scores, expected_note flags the metric
_INTEGER = re.compile(r"^[0-9]{1,2}$")  # ASCII digits only: "²" or "٣" are not scores


def score_token_value(text: str) -> int | None:
    """The integer a token stands for when it is one (0-10, whitespace ignored), else None."""
    stripped = text.strip()
    if not _INTEGER.match(stripped):
        return None
    value = int(stripped)
    return value if value <= MAX_SCORE_TOKEN else None


def collect_score_probs(tokens: Iterable[tuple[str, float]], logprobs: bool = False) -> dict[str, float]:
    """{"0": p, ..., "10": p} from (token text, probability or log-probability) pairs; other tokens dropped."""
    out: dict[str, float] = {}
    for text, value in tokens:
        score = score_token_value(text)
        if score is None:
            continue
        p = math.exp(value) if logprobs else value
        out[str(score)] = out.get(str(score), 0.0) + p
    return out


def expected_score(probs: Mapping[str, float], label_range: tuple[float, float]) -> tuple[float, float] | None:
    """(probability-weighted mean over the integer scores in the range, their total probability before
    renormalising), or None when no valid score token got any probability (possible only with a top-k list)."""
    lo, hi = label_range
    valid = {int(k): p for k, p in probs.items() if lo <= int(k) <= hi}  # a token of probability 0 adds nothing
    mass = sum(valid.values())
    if mass <= 0:
        return None
    return sum(k * p for k, p in valid.items()) / mass, mass


def expected_metrics(samples: Sequence[Scored], asked: bool | None = None) -> dict[str, Any]:
    """The expected-score metrics of a run, beside (never mixed with) the parsed ones; {} when not asked for
    (`asked` None: asked when any sample has an expected score, for callers that do not know the config).

    Two ways an answer gets no expected score, counted apart: `expected_no_logprobs`, the reply held no
    log-probabilities (a server that ignores `logprobs`: expected_mass None), and `expected_missing`, the
    returned alternatives held no valid score token (the model put its top-k mass elsewhere: expected_mass 0).
    `expected_mass_mean` is the average probability the valid score tokens had at the first position before
    renormalising, over the answers with log-probabilities: low, and the model mostly starts its reply with
    something else (a chat preamble, an echo), so the renormalised scores rest on small probabilities;
    `expected_note` then says so."""
    answered = [s for s in samples if s.error is None and s.output is not None]
    scored = [s for s in answered if s.expected is not None]
    if not (scored if asked is None else asked and answered):
        return {}
    seen = [s for s in answered if s.expected_mass is not None]
    out: dict[str, Any] = {
        "n_expected": len(scored),
        "expected_missing": len(seen) - len(scored),
        "expected_no_logprobs": len(answered) - len(seen),
    }
    notes = []
    if out["expected_no_logprobs"]:
        notes.append(
            f"{out['expected_no_logprobs']} of {len(answered)} replies held no log-probabilities "
            "(the backend ignored the request for them): no expected score for those"
        )
    if not seen:
        return out | {"expected_note": "; ".join(notes)}
    mass = sum(s.expected_mass or 0.0 for s in seen) / len(seen)
    out["expected_mass_mean"] = mass
    labelled = [s for s in scored if s.label is not None]
    if labelled:
        pred = np.array([s.expected for s in labelled], dtype=float)
        gold = np.array([s.label for s in labelled], dtype=float)
        out |= {
            "spearman_expected": spearman(pred, gold),
            "pearson_expected": pearson(pred, gold),
            "mse_expected": float(np.mean((pred - gold) ** 2)),
        }
    if mass < LOW_MASS:
        notes.append(
            f"valid score tokens had {100 * mass:.1f}% of the first-token probability on average: "
            "the model mostly starts its reply with something else"
        )
    if out["expected_missing"]:
        notes.append(f"{out['expected_missing']} replies had no valid score token among the returned alternatives")
    return out | ({"expected_note": "; ".join(notes)} if notes else {})
