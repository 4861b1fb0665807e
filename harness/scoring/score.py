"""Score a run's answers: the paper's first-number rule, its seeded fallback, and the diagnostics beside it."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from harness.datasets.load import pair_ids
from harness.prompting.prepared import Prepared
from harness.scoring.expected import expected_score
from harness.scoring.parsing import fallback_score, parse_score, reason_code, strict_score
from harness.types import Completion, Scored


def reply_fields(c: Completion | None) -> dict[str, Any]:
    """What samples.jsonl keeps of a reply besides its text: finish reason, usage, served model, refusal, cut."""
    if c is None:
        return {}
    return {
        "finish_reason": c.finish_reason,
        "usage": dataclasses.asdict(c.usage) if c.error is None else None,
        "served_model": c.served_model,
        "refusal": c.refusal,
        "truncated": c.truncated,
    }


def score(
    prep: Prepared,
    completions: Mapping[str, Completion] | None,
    seed: int,
    strict: bool = False,
    parsed_already: Mapping[str, float | None] | None = None,
) -> list[Scored]:
    """Parse each output by the reference rule; an invalid one gets the seeded fallback draw.

    `parsed_already`: the first-number parses dispatch made as the answers arrived (harness/calling/dispatch.py
    `Replies.parsed`), so that no output is parsed twice; an output missing there is parsed here.

    Each answered sample also gets its reason code (parsing.reason_code) and, with `strict`, the
    `--parse strict` reading with the same fallback draw, so the two metric sets differ only in parsing.
    """
    pairs = pair_ids(prep.dataset.examples) if prep.dataset.name == "csts" else {}
    label_range = prep.dataset.label_range
    out = []
    for q, shots, req in zip(prep.queries, prep.shots, prep.requests, strict=True):
        c = completions[req.id] if completions is not None else None
        text = c.text if c is not None else None
        error = c.error if c is not None else None
        parsed = parsed_already[req.id] if parsed_already and req.id in parsed_already else parse_score(text)
        valid = parsed is not None
        reason = parsed_strict = prediction_strict = None
        if c is None or error is not None:
            prediction = None  # no answer yet (dry run) or a failed request: never a fallback draw
        else:
            fallback = fallback_score(seed, q.id, label_range)
            prediction = parsed if valid else fallback
            if strict:
                parsed_strict = strict_score(text)
                prediction_strict = fallback if parsed_strict is None else parsed_strict
        if c is not None:
            reason = reason_code(text, parsed, label_range, c.finish_reason, c.refusal, error)
        shot_ids = tuple(s.id for s in shots)
        probs = c.score_probs if c is not None and error is None else None
        weighted = expected_score(probs, label_range) if probs is not None else None
        expected, mass = weighted if weighted is not None else (None, None)
        scored = Scored(
            q.id,
            req.prompt,
            shot_ids,
            text,
            parsed,
            valid,
            prediction,
            q.label,
            error,
            pairs.get(q.id),
            reason,
            parsed_strict,
            prediction_strict,
            expected=expected,  # --scoring expected: never mixed into prediction
            expected_mass=mass,
        )
        out.append(dataclasses.replace(scored, **reply_fields(c)))  # finish reason, usage, served model, refusal
    return out
