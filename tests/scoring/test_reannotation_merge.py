"""Zhang et al. 2025's V() over three sources (§2.2, Table 11: "taking the arithmetic mean and rounding to the
nearest integer"), on a worked example computed by hand, item by item."""

from __future__ import annotations

from harness.scoring.reannotation import merged_labels

ORIGINAL = {"a": 2.0, "b": 4.0, "c": 1.0, "d": 3.0, "e": 3.0, "f": None}
GPT = {"a": [3], "b": [5], "c": [None], "d": [None], "e": [4], "f": [2]}
CLAUDE = {"a": [5], "b": [5], "c": [2], "d": [None], "e": [4, 5], "f": [3]}
# a: (2 + 3 + 5) / 3 = 3.33 -> 3          b: (4 + 5 + 5) / 3 = 4.67 -> 5
# c: GPT gave no valid rating, no vote: (1 + 2) / 2 = 1.5 -> 2 (halves up)
# d: no model gave a valid rating -> None (written -1), never the human label alone
# e: Claude's two repeats are one vote, their mean: (3 + 4 + 4.5) / 3 = 3.83 -> 4
# f: no original label (the test split): (2 + 3) / 2 = 2.5 -> 3
# g: not in the original labels: not merged
WORKED = {"a": 3, "b": 5, "c": 2, "d": None, "e": 4, "f": 3}


def test_v_of_human_and_two_models_on_a_worked_example() -> None:
    assert merged_labels([GPT, CLAUDE | {"g": [1]}], ORIGINAL) == WORKED
    # the order of the two models does not matter; an item one model never rated is that model's missing vote
    assert merged_labels([CLAUDE, GPT], ORIGINAL) == WORKED
    assert merged_labels([{}, CLAUDE], {"a": 2.0}) == {"a": 4}  # (2 + 5) / 2 = 3.5 -> 4
