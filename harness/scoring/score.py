"""Score a run's answers: the paper's first-number rule, its seeded fallback, and the diagnostics beside it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from harness.datasets.load import pair_ids
from harness.prompting.prepared import Prepared
from harness.scoring.constrained import parse_constrained
from harness.scoring.parsing import fallback_score, parse_score, reason_code, strict_score
from harness.scoring.reasoning import split_reply, thinking_cut_off
from harness.types import Completion, Scored

# --constrain: a reply that holds a number but not in the constrained shape (the backend ignored the constraint).
OFF_FORMAT = "off-format"
MALFORMED = "malformed"  # a reply that came back but could not be read (harness/calling/backends/reading.py)


def _usage(c: Completion) -> dict[str, int]:
    """What samples.jsonl keeps of a reply's usage: dataclasses.asdict(c.usage), spelt out (once per sample);
    with hidden reasoning tokens, those and the answer's own."""
    u = c.usage
    if u.reasoning_tokens:
        answer = u.output_tokens - u.reasoning_tokens
        return {"input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
                "reasoning_tokens": u.reasoning_tokens, "answer_tokens": answer}  # fmt: skip
    return {"input_tokens": u.input_tokens, "output_tokens": u.output_tokens}


def answer_parser(
    think_tags: Sequence[tuple[str, str]], base: Callable[[str | None], float | None] = parse_score
) -> Callable[[str | None], float | None]:
    """The paper's first-number rule (or --constrain's reader, `base`) on the answer after any inline thought:
    what dispatch parses as replies arrive (`score` reuses it); a thought that never closed is no answer."""
    if not think_tags:
        return base
    return lambda text: base(split_reply(text, None, think_tags).answer)


def score(
    prep: Prepared,
    completions: Mapping[str, Completion] | None,
    seed: int,
    strict: bool = False,
    parsed_already: Mapping[str, float | None] | None = None,
    think_tags: Sequence[tuple[str, str]] = (),
    constrained: bool = False,
) -> list[Scored]:
    """Parse each output by the reference rule; an invalid one gets the seeded fallback draw.

    `parsed_already`: the first-number parses dispatch made as the answers arrived (harness/calling/dispatch.py
    `Replies.parsed`), so that no output is parsed twice; an output missing there is parsed here.

    The first-number rule reads the answer, after any thought (harness/scoring/reasoning.py, `think_tags` the
    inline delimiters); the thought goes to `reasoning`. Each answered sample also gets its reason code
    (parsing.reason_code) and, with `strict`, the `--parse strict` reading with the same fallback draw, so the
    two metric sets differ only in parsing.
    `constrained` (--constrain): replies are read by harness/scoring/constrained.py `parse_constrained` instead,
    and one with a number in another shape gets the reason code "off-format".
    """
    parse = parse_constrained if constrained else parse_score
    pairs = pair_ids(prep.dataset.examples) if prep.dataset.conditions else {}
    label_range = prep.dataset.label_range
    parsed_already = parsed_already or {}
    out = []
    for q, shots, req in zip(prep.queries, prep.shots, prep.requests, strict=True):
        c = completions[req.id] if completions is not None else None
        shot_ids = tuple(s.id for s in shots)
        if c is None:  # a dry run: no answer yet, never a fallback draw
            out.append(Scored.unanswered(q.id, req.prompt, q.label, pairs.get(q.id), shot_ids))
            continue
        error = c.error
        split = split_reply(c.text, c.reasoning, think_tags)
        text = split.answer if split.answer is not None or c.text is None else ""  # a thought that never closed
        parsed = parsed_already[req.id] if req.id in parsed_already else parse(text)
        valid = parsed is not None
        parsed_strict = prediction_strict = None
        if error is not None:
            prediction = None  # a failed request: never a fallback draw
        else:
            fallback = fallback_score(seed, q.id, label_range)
            prediction = parsed if valid else fallback
            if strict:
                parsed_strict = strict_score(text)
                prediction_strict = fallback if parsed_strict is None else parsed_strict
        cut = thinking_cut_off(split, c.finish_reason, c.usage.reasoning_tokens)
        reason = reason_code(text, parsed, label_range, c.finish_reason, c.refusal, error, cut)
        if constrained and reason == "no-number" and parse_score(text) is not None:
            reason = OFF_FORMAT
        if c.malformed is not None and error is None:  # a paid reply that could not be read (kept, cached)
            reason = MALFORMED
        expected = mass = dropped = None
        if c.score_probs is not None and error is None:  # --scoring expected
            from harness.scoring.expected import DROPPED, expected_score  # with numpy, which only this needs here

            weighted = expected_score(c.score_probs, label_range)
            dropped = int(c.score_probs.get(DROPPED, 0)) or None  # values that could be no log-probability
            # No valid score token among the returned alternatives: mass 0, told apart from no logprobs (None).
            expected, mass = weighted if weighted is not None else (None, 0.0)
        out.append(
            Scored(
                id=q.id,
                prompt=req.prompt,
                shot_ids=shot_ids,
                output=text,
                parsed=parsed,
                valid=valid,
                prediction=prediction,
                label=q.label,
                error=error,
                pair=pairs.get(q.id),
                reason=reason,
                parsed_strict=parsed_strict,
                prediction_strict=prediction_strict,
                finish_reason=c.finish_reason,
                usage=_usage(c) if error is None else None,
                served_model=c.served_model,
                refusal=c.refusal,
                truncated=c.truncated,
                expected=expected,  # --scoring expected: never mixed into prediction
                expected_mass=mass,
                expected_dropped=dropped,
                reasoning=split.thought,
            )
        )
    return out
