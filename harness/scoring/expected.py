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

from harness.scoring.metrics import correlation_note, pearson, spearman
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


# A log-probability is finite (or -inf: a token the sampler excluded) and at most 0; a server's rounding may put one a
# hair above 0, read as 0. Anything else (+Infinity, NaN, 0.7, 800) is no log-probability: dropped and counted, never
# exp()'d (exp(800) overflows and lost a paid reply; a positive one gave a mass of 10; +inf an expected score of NaN).
LOGPROB_TOLERANCE = 1e-4
MASS_TOLERANCE = 1e-3  # first-position probabilities that sum to more than 1 + this are no distribution
DROPPED = "dropped"  # score_probs key: how many score-token values were dropped (absent when none)


def collect_score_probs(tokens: Iterable[tuple[str, float]], logprobs: bool = False) -> dict[str, float]:
    """{"0": p, ..., "10": p} from (token text, probability or log-probability) pairs; other tokens dropped.

    Only values that can be what they claim count: log-probabilities finite (or -inf) and <= 0, probabilities in
    [0, 1] (each within a small tolerance). The number of score-token values left out is kept under "dropped"; if
    what is left sums to more than 1, none of it is a distribution and all of it is dropped."""
    out: dict[str, float] = {}
    dropped = kept = 0
    for text, value in tokens:
        score = score_token_value(text)
        if score is None:
            continue
        p = _probability(value, logprobs)
        if p is None:
            dropped += 1
            continue
        kept += 1
        out[str(score)] = out.get(str(score), 0.0) + p
    if sum(out.values()) > 1.0 + MASS_TOLERANCE:
        dropped += kept
        out = {}
    return out | ({DROPPED: float(dropped)} if dropped else {})


def _probability(value: object, logprobs: bool) -> float | None:
    """The probability `value` stands for, or None when it cannot be one (see LOGPROB_TOLERANCE)."""
    if not isinstance(value, int | float) or isinstance(value, bool) or math.isnan(value):
        return None
    if logprobs:
        return math.exp(min(value, 0.0)) if value <= LOGPROB_TOLERANCE else None  # -inf gives 0.0
    return min(float(value), 1.0) if 0.0 <= value <= 1.0 + LOGPROB_TOLERANCE else None


def score_values(probs: Mapping[str, float]) -> dict[int, float]:
    """{score: probability} of a stored score_probs, its "dropped" count left out."""
    return {int(k): p for k, p in probs.items() if k.isdigit()}


def expected_score(probs: Mapping[str, float], label_range: tuple[float, float]) -> tuple[float, float] | None:
    """(probability-weighted mean over the integer scores in the range, their total probability before
    renormalising), or None when no valid score token got any probability (possible only with a top-k list)."""
    lo, hi = label_range
    valid = {k: p for k, p in score_values(probs).items() if lo <= k <= hi}  # a probability 0 adds nothing
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
        # As the parsed correlations (metrics.py): one expected value for every item (a model whose only score
        # token in its top 20 is "1") leaves them undefined, and a few items leave them wide; the note says which.
        if (note := correlation_note(pred, gold)) is not None:
            out |= {"spearman_expected_note": note, "pearson_expected_note": note}
    if mass < LOW_MASS:
        notes.append(
            f"valid score tokens had {100 * mass:.1f}% of the first-token probability on average: "
            "the model mostly starts its reply with something else"
        )
    if out["expected_missing"]:
        notes.append(f"{out['expected_missing']} replies had no valid score token among the returned alternatives")
    dropped = [s.expected_dropped for s in answered if s.expected_dropped]
    if dropped:
        out["expected_dropped"] = len(dropped)
        notes.append(
            f"{len(dropped)} replies held score-token values that are no log-probability (NaN, +inf, above 0, or "
            f"summing past 1): {sum(dropped)} dropped (samples.jsonl expected_dropped)"
        )
    return out | ({"expected_note": "; ".join(notes)} if notes else {})
