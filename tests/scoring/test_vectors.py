"""harness/scoring/vectors.py on tables of cases: a stored embedding read, or given its reason code; the common
length; what a run's replies give (vectors, and why the others have none); the counts metrics.json shows."""

from __future__ import annotations

import math
import sys
from typing import Any

import pytest

from harness.scoring.vectors import (
    MAX_DIM,
    MAX_TEXT,
    check_vector,
    common_length,
    embedded,
    finite_vector,
    read_all,
    read_vector,
    unusable_counts,
    usable,
    vector_from,
)
from harness.types import Completion, Request

QUARTER = math.sqrt(sys.float_info.max / 4)  # the longest vector of one number that passes, about 6.7e153


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("[1.0, 2.5, -3e2]", [1.0, 2.5, -300.0]),
        ("[1, 2]", [1.0, 2.0]),
        ("[]", "empty"),
        ('"a string"', "not-a-list"),
        ("null", "not-a-list"),
        (None, "not-a-list"),
        ("[[1.0], [2.0]]", "not-a-list"),
        ("[NaN, 1.0]", "not-a-list"),  # NaN and Infinity never reach the decoder
        ("[1e999]", "not-finite"),
        ("[1e200, 1e200]", "not-finite"),  # its squared length is not finite
        ("[" + "9" * 400 + "]", "not-finite"),
        ("[1.0" + ", 1.0" * 65_536 + "]", "too-long"),  # 65,537 numbers
        ("[1.0" + ", 1.0" * 65_535 + "]", [1.0] * 65_536),
        ("[" + " " * (2**21 - 3) + "1]", [1.0]),  # 2 MiB of characters: still read
        ("[" + " " * (2**21 - 2) + "1]", "too-long"),  # one more: too long a text to read at all
        ("[1, 2", "not-a-list"),
    ],
)
def test_a_stored_vector_is_read_or_given_a_reason(text: str | None, want: Any) -> None:
    assert read_vector(text) == want


@pytest.mark.parametrize(
    ("value", "want"),
    [
        ([1, 2.5], [1.0, 2.5]),
        ((1.0,), [1.0]),
        ([True, 1.0], "not-a-list"),  # a bool is no number
        (["1"], "not-a-list"),
        ([[1.0]], "not-a-list"),
        ("1, 2", "not-a-list"),
        (None, "not-a-list"),
        ([], "empty"),
        ([float("nan")], "not-finite"),
        ([float("-inf"), 1.0], "not-finite"),
        ([10**400], "not-finite"),
        ([1.01 * QUARTER], "not-finite"),  # its squared length past a quarter of the largest float
        ([0.99 * QUARTER], [0.99 * QUARTER]),  # within: a distance to any other vector that passes stays finite
        ([0.0] * 65_536, [0.0] * 65_536),
        ([0.0] * 65_537, "too-long"),
    ],
)
def test_a_value_is_a_vector_or_a_reason(value: Any, want: Any) -> None:
    assert check_vector(value) == want
    assert finite_vector(value) == (None if isinstance(want, str) else want)


def test_the_text_bound_fits_the_longest_vector_it_takes() -> None:
    longest = "[" + ", ".join(["-1.2345678901234567e-300"] * MAX_DIM) + "]"
    assert len(longest) <= MAX_TEXT and read_vector(longest) == [-1.2345678901234567e-300] * MAX_DIM
    assert vector_from(longest) == read_vector(longest) and vector_from("[]") is None


def test_the_common_length_is_the_most_frequent_and_the_longer_on_a_tie() -> None:
    assert common_length({"a": [1.0, 2.0], "b": [1.0, 2.0], "c": [1.0]}) == 2
    assert common_length({"a": [1.0], "b": [1.0], "c": [1.0, 2.0]}) == 1
    assert common_length({"a": [1.0], "b": [1.0, 2.0]}) == 2
    assert common_length({}) == 0


def test_every_reply_is_a_vector_of_the_common_length_or_a_reason() -> None:
    vectors, reasons = read_all({"a": "[1, 2]", "b": "[3, 4]", "c": "[5]", "d": "null", "e": None, "f": "[NaN]"})
    assert vectors == {"a": [1.0, 2.0], "b": [3.0, 4.0]}
    assert reasons == {"c": "other-length", "d": "not-a-list", "e": "not-a-list", "f": "not-a-list"}
    assert usable({"a": [1, 2], "b": [3, 4], "c": [5], "d": None, "e": [float("inf"), 1]}) == {
        "a": [1.0, 2.0],
        "b": [3.0, 4.0],
    }


def test_a_run_s_replies_give_vectors_and_why_the_others_have_none() -> None:
    requests = [Request(f"r{i}", f"text {i}") for i in range(5)]
    completions = {
        "r0": Completion("r0", "[1, 0]"),
        "r1": Completion("r1", "[0, 1]"),
        "r2": Completion("r2", None, error="HTTP 500: down"),
        "r3": Completion("r3", "", malformed="unusable-embedding: not-a-list"),
        "r4": Completion("r4", "[1, 2, 3]"),
    }
    vectors, errors = embedded(requests, completions)
    assert vectors == {"text 0": [1.0, 0.0], "text 1": [0.0, 1.0]}
    assert errors == {
        "text 2": "HTTP 500: down",
        "text 3": "unusable-embedding: not-a-list",
        "text 4": "unusable-embedding: other-length",
    }
    assert unusable_counts(errors) == {"not-a-list": 1, "other-length": 1}
    assert embedded([Request("x", "t")], {"x": Completion("x", "")})[1] == {"t": "no embedding"}
