"""The reference parsing rule and the seeded fallback."""

from __future__ import annotations

import json

import pytest

from harness.parsing import fallback_score, in_range, parse_score
from tests.conftest import SHARED, requires_shared

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


@requires_shared
def test_every_golden_parse_case() -> None:
    cases = [json.loads(line) for line in (SHARED / "golden" / "parse_cases.jsonl").read_text().splitlines()]
    assert cases
    assert [parse_score(c["output"]) for c in cases] == [c["parsed"] for c in cases]


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
