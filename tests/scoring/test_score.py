"""score(): each answer to one samples.jsonl line, field by field, on synthetic queries (no model, no data files)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.prompting.prepared import Prepared
from harness.scoring.parsing import fallback_score
from harness.scoring.score import score
from harness.types import Completion, Dataset, Example, Request, Usage


def _prep(name: str = "csts", n: int = 4) -> Prepared:
    """n queries; with C-STS, rows 0/1 and 2/3 are the two conditions of one sentence pair (1 written swapped)."""
    rows = []
    for i in range(n):
        pair = i // 2
        s1, s2 = (f"a{pair}", f"b{pair}") if i % 2 == 0 else (f"b{pair}", f"a{pair}")
        rows.append(Example(str(i), s1, s2, f"c{i}", 1.0 + i % 5))
    label_range = (1.0, 5.0) if name == "csts" else (0.0, 5.0)
    ds = Dataset(name, "validation", tuple(rows), tuple(rows), label_range, conditions=name == "csts")
    shots = tuple((rows[(i + 1) % n],) if i % 2 else () for i in range(n))
    requests = tuple(Request(f"r{i}", f"prompt {i}") for i in range(n))
    return Prepared(ds, tuple(rows), shots, requests, renderer=None)  # type: ignore[arg-type]


def _answers(*texts: Any) -> dict[str, Completion]:
    return {f"r{i}": t if isinstance(t, Completion) else Completion(f"r{i}", t) for i, t in enumerate(texts)}


def test_a_dry_run_has_prompts_shots_pairs_and_nothing_else() -> None:
    out = score(_prep(), None, seed=0)
    assert [(s.id, s.prompt, s.shot_ids, s.pair) for s in out] == [
        ("0", "prompt 0", (), "0"),
        ("1", "prompt 1", ("2",), "0"),
        ("2", "prompt 2", (), "2"),
        ("3", "prompt 3", ("0",), "2"),
    ]
    for s in out:
        assert (s.output, s.parsed, s.valid, s.prediction, s.reason, s.usage) == (None, None, False, None, None, None)
    assert [s.label for s in out] == [1.0, 2.0, 3.0, 4.0]


def test_stsb_has_no_pair_clusters() -> None:
    assert [s.pair for s in score(_prep("stsb"), None, seed=0)] == [None] * 4


def test_a_parsed_answer_is_its_prediction_and_an_invalid_one_gets_the_seeded_draw() -> None:
    prep = _prep()
    out = score(prep, _answers("Score: 4", "no idea", "7", "2.5"), seed=3)
    assert [(s.id, s.prompt, s.shot_ids, s.output, s.label) for s in out[:2]] == [
        ("0", "prompt 0", (), "Score: 4", 1.0),
        ("1", "prompt 1", ("2",), "no idea", 2.0),
    ]
    assert [s.pair for s in out] == ["0", "0", "2", "2"]
    assert [(s.parsed, s.valid) for s in out] == [(4.0, True), (None, False), (7.0, True), (2.5, True)]
    assert out[0].prediction == 4.0 and out[2].prediction == 7.0  # out of range is kept, and flagged by its reason
    assert out[1].prediction == fallback_score(3, "1", (1.0, 5.0))
    assert out[1].prediction != fallback_score(4, "1", (1.0, 5.0))  # the run's seed decides the draw
    assert [s.reason for s in out] == ["number", "no-number", "out-of-range", "number"]
    stsb = score(_prep("stsb"), _answers("x", "x", "x", "x"), seed=3)
    assert [s.prediction for s in stsb] == [fallback_score(3, str(i), (0.0, 5.0)) for i in range(4)]


def test_a_failed_request_never_gets_a_draw_or_usage() -> None:
    failed = Completion("r1", None, error="HTTP 500", usage=Usage(9, 9))
    ok = Completion("r0", "3", usage=Usage(12, 2), finish_reason="stop", served_model="m-2024", truncated=True)
    out = score(_prep(n=2), {"r0": ok, "r1": failed}, seed=0)
    assert (out[1].prediction, out[1].error, out[1].usage, out[1].reason) == (None, "HTTP 500", None, "error")
    assert out[0].usage == {"input_tokens": 12, "output_tokens": 2}
    assert (out[0].finish_reason, out[0].served_model, out[0].truncated) == ("stop", "m-2024", True)
    assert (out[1].finish_reason, out[1].truncated) == (None, False)


def test_a_refusal_is_an_invalid_answer_with_its_text() -> None:
    out = score(_prep(n=1), {"r0": Completion("r0", "", refusal="I can't.")}, seed=0)
    assert (out[0].valid, out[0].refusal, out[0].reason) == (False, "I can't.", "refusal")
    assert out[0].prediction == fallback_score(0, "0", (1.0, 5.0))


def test_strict_parsing_is_a_second_reading_with_the_same_draw() -> None:
    out = score(_prep(n=3), _answers("4", "between 1 and 5: 3", "none"), seed=1, strict=True)
    assert [(s.parsed_strict, s.prediction_strict) for s in out[:1]] == [(4.0, 4.0)]
    assert out[1].parsed == 1.0 and out[1].parsed_strict is None
    assert out[1].prediction_strict == fallback_score(1, "1", (1.0, 5.0))
    assert out[2].prediction_strict == out[2].prediction == fallback_score(1, "2", (1.0, 5.0))
    plain = score(_prep(n=3), _answers("4", "between 1 and 5: 3", "none"), seed=1)
    assert all(s.parsed_strict is None and s.prediction_strict is None for s in plain)
    failed = score(_prep(n=1), {"r0": Completion("r0", None, error="x")}, seed=1, strict=True)
    assert (failed[0].parsed_strict, failed[0].prediction_strict) == (None, None)


def test_parses_made_on_arrival_are_used_even_when_they_found_nothing() -> None:
    out = score(_prep(n=3), _answers("4", "2", "5"), seed=0, parsed_already={"r0": 3.0, "r1": None})
    assert [s.parsed for s in out] == [3.0, None, 5.0]
    assert out[1].prediction == fallback_score(0, "1", (1.0, 5.0))


def test_expected_scoring_is_kept_beside_the_prediction() -> None:
    probs = {"2": 0.25, "4": 0.5, "9": 0.25}  # 9 is off the 1-5 scale: dropped, the rest renormalised
    answers = {
        "r0": Completion("r0", "4", score_probs=probs),
        "r1": Completion("r1", "3"),
        "r2": Completion("r2", None, error="boom", score_probs=probs),
    }
    out = score(_prep(n=3), answers, seed=0)
    assert out[0].expected == pytest.approx((2 * 0.25 + 4 * 0.5) / 0.75)
    assert out[0].expected_mass == pytest.approx(0.75)
    assert out[0].prediction == 4.0  # never mixed in
    assert (out[1].expected, out[1].expected_mass) == (None, None)
    assert (out[2].expected, out[2].expected_mass) == (None, None)
    nothing = score(_prep(n=1), {"r0": Completion("r0", "4", score_probs={"9": 1.0})}, seed=0)
    assert (nothing[0].expected, nothing[0].expected_mass) == (None, 0.0)  # log-probabilities, none on the scale


def test_queries_and_requests_that_do_not_line_up_are_an_error_not_a_truncation() -> None:
    import dataclasses

    prep = _prep(n=4)
    short = dataclasses.replace(prep, requests=prep.requests[:3])
    with pytest.raises(ValueError, match="zip"):
        score(short, _answers("1", "2", "3"), seed=0)
