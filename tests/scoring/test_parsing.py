"""The reference parsing rule and the seeded fallback."""

from __future__ import annotations

import json

import pytest

from harness.scoring.parsing import REASONS, fallback_score, in_range, is_echo, parse_score, reason_code, strict_score
from tests.conftest import SHARED

GOLDEN_PARSE = SHARED / "golden" / "parse_cases.jsonl"
requires_golden_parse = pytest.mark.skipif(
    not GOLDEN_PARSE.is_file(), reason=f"needs the shared golden parse cases at {GOLDEN_PARSE} (not in a plain clone)"
)

CASES = [
    ("The Answer is 2.0.", 2.0),
    ("4", 4.0),
    ("  3\n", 3.0),
    ("Score: 3/5", 3.0),
    ("-1", 1.0),
    (".5", 5.0),
    ("4.5.", 4.5),
    ("4,5", 4.0),
    ("five", None),
    ("", None),
    (None, None),
    ("I cannot determine the similarity.", None),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_first_number_rule(text: str | None, expected: float | None) -> None:
    assert parse_score(text) == expected


@requires_golden_parse
def test_every_golden_parse_case() -> None:
    """Needs only golden/parse_cases.jsonl, not the C-STS archive."""
    cases = [json.loads(line) for line in GOLDEN_PARSE.read_text().splitlines()]
    assert cases
    assert [parse_score(c["output"]) for c in cases] == [c["parsed"] for c in cases]


@requires_golden_parse
def test_diagnostics_never_change_the_papers_reading_of_a_golden_case() -> None:
    """reason_code and strict_score sit beside the rule: valid per the paper stays valid, and strict only
    ever keeps the paper's own number or drops it."""
    for case in (json.loads(line) for line in GOLDEN_PARSE.read_text().splitlines()):
        parsed = parse_score(case["output"])
        reason = reason_code(case["output"], parsed, (1.0, 5.0))
        assert (reason in ("number", "echo", "out-of-range")) == (case["parsed"] is not None)
        assert strict_score(case["output"]) in (None, case["parsed"])


REASON_CASES = [
    # (text, finish_reason, refusal, error, expected)
    ("4", "stop", None, None, "number"),
    ("The Answer is 2.0.", None, None, None, "number"),
    ("10", "stop", None, None, "out-of-range"),
    ("0", None, None, None, "out-of-range"),
    ("I cannot determine the similarity.", "stop", None, None, "no-number"),
    ("", "stop", None, None, "no-number"),
    (None, None, None, None, "no-number"),
    ("The two sentences both describe", "length", None, None, "cut-off"),
    ("3.5 because the two sentences both describe", "length", None, None, "number"),  # a number: not cut off
    ("", "stop", "I can't help with that.", None, "refusal"),
    ("", "stop", "", None, "refusal"),  # a refusal field, even an empty one, is a refusal (not no-number)
    ("", "content_filter", None, None, "refusal"),
    (None, None, None, "HTTP 500 after 9 attempts", "error"),
    ("Sentence 1: A man is playing a guitar.", "length", None, None, "echo"),
    ("Input:  Sentence 1:  two dogs run", "stop", None, None, "echo"),
    ("Answer 2: blue", None, None, None, "echo"),
    ("Condition: The number of people. There are 3 men", None, None, None, "echo"),
    ("Condition: The color. Output: 4", None, None, None, "number"),  # the cue ends the echo
    ("Sentence 1 and sentence 2 are similar: 4", None, None, None, "number"),  # no colon: not a key
    # issue 42: the instruction echoed; its scale's lower bound is the first number
    ("On a scale between 0 and 5, how similar are the following two sentences? Respond only", "length", None, None,
     "echo"),
    ("On a scale of 1 to 5, how similar are the", "length", None, None, "echo"),
    ("Respond only with a score between 1 and 5.", None, None, None, "echo"),
    ("On a scale from 1-5: 4", None, None, None, "echo"),  # the first number read is still the scale's
    ("The score is 4 out of 5", None, None, None, "number"),
    ("A score of 4.", None, None, None, "number"),  # no range after it: an answer
    ("On this scale, 3 and 4 are close", None, None, None, "number"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "finish", "refusal", "error", "expected"), REASON_CASES)
def test_reason_codes(
    text: str | None, finish: str | None, refusal: str | None, error: str | None, expected: str
) -> None:
    code = reason_code(text, parse_score(text), (1.0, 5.0), finish_reason=finish, refusal=refusal, error=error)
    assert code == expected and code in REASONS


def test_every_reason_code_is_reachable() -> None:
    seen = {reason_code(t, parse_score(t), (1.0, 5.0), f, r, e) for t, f, r, e, _ in REASON_CASES}
    seen.add(reason_code("", None, (1.0, 5.0), "length", thinking_cut_off=True))  # tests/scoring/test_reasoning.py
    assert seen == set(REASONS)


def test_echo_is_about_the_first_number_only() -> None:
    assert is_echo("Sentence 1: a") and is_echo("sentence 2 : x")
    assert not is_echo("4. Sentence 1: a")  # the score came first; the echo after it is not what was read
    assert not is_echo("no number at all")
    # The key nearest the number decides: an answer cue after an earlier key does not excuse a later echo.
    assert is_echo("Condition: x. Output: Condition: 3")
    assert not is_echo("Condition: x. Question: y. Output: 3")


STRICT_CASES = [
    ("4", 4.0),
    ("  3\n", 3.0),
    ("4.0.", 4.0),
    ("[4]", 4.0),
    ("**2**", 2.0),
    ("0.5\nA slow loris is", 0.5),
    ("4 out of 5.", 4.0),
    ("The Answer is 2.0.", 2.0),
    ("Output: 5.0", 5.0),
    ("Score: 3/5", 3.0),
    ("Rating: **2**", 2.0),
    ("The similarity is 4, because both mention dogs.", 4.0),
    ("-1", None),
    (".5", None),
    ("3-4", None),
    ("1 to 2", None),
    ("4,5", None),
    ("between 1 and 5: 3", None),
    ("I would rate this a 4 out of 5.", None),
    ("Sentence 1: A man is 3 years old", None),
    ("Answer 1: 3", None),
    ("five", None),
    (None, None),
]


@pytest.mark.parametrize(("text", "expected"), STRICT_CASES)
def test_strict_parse(text: str | None, expected: float | None) -> None:
    assert strict_score(text) == expected
    assert expected is None or parse_score(text) == expected  # strict keeps the paper's number or nothing


def test_fallback_is_identical_across_calls() -> None:
    assert fallback_score(0, "17", (1.0, 5.0)) == fallback_score(0, "17", (1.0, 5.0))


def test_fallback_depends_on_seed_and_query() -> None:
    draws = {fallback_score(s, q, (1.0, 5.0)) for s in range(3) for q in ("1", "2", "3")}
    assert len(draws) == 9


def test_fallback_stays_in_the_label_range() -> None:
    draws = [fallback_score(0, str(i), (0.0, 5.0)) for i in range(2000)]
    assert min(draws) >= 0.0 and max(draws) <= 5.0
    assert 2.3 < sum(draws) / len(draws) < 2.7  # uniform: mean near the middle


def test_in_range_is_inclusive() -> None:
    assert in_range(1.0, (1.0, 5.0)) and in_range(5.0, (1.0, 5.0))
    assert not in_range(10.0, (1.0, 5.0)) and not in_range(0.0, (1.0, 5.0))
