"""Which sentence pair each example belongs to: the clusters of the C-STS bootstrap (reporting/report.py groups_of)
and of qa-embed's samples. A pair is its two sentences in either order; its id is the first row holding it."""

from __future__ import annotations

from collections import Counter

import pytest

from harness.datasets.choose import load_dataset
from harness.datasets.load import pair_ids, pair_key
from harness.types import Example
from tests.conftest import SHARED_ARCHIVE, SHARED_PASSWORD, requires_shared


def test_both_conditions_of_a_pair_and_either_order_share_one_id() -> None:
    rows = [
        Example("0", "a cat", "a dog", "c1", 1.0),
        Example("1", "a cat", "a dog", "c2", 5.0),
        Example("2", "a dog", "a cat", "c3", 2.0),  # the same pair, sentences swapped
        Example("3", "a cat", "a cow", "c1", 3.0),
        Example("4", "a cow", "a cat", "c2", 3.0),
        Example("5", "a cat", "a cat", "c1", 4.0),
    ]
    assert pair_ids(rows) == {"0": "0", "1": "0", "2": "0", "3": "3", "4": "3", "5": "5"}
    assert pair_key(rows[2]) == pair_key(rows[0]) == ("a cat", "a dog") and pair_key(rows[5]) == ("a cat", "a cat")
    assert pair_ids(reversed(rows)) == {"5": "5", "4": "4", "3": "4", "2": "2", "1": "2", "0": "2"}  # first seen


@requires_shared
@pytest.mark.parametrize(
    ("split", "rows", "pairs", "beside"),
    # rows 2i and 2i+1 are one pair's two conditions, except where the release repeats a pair further on
    [("validation", 2834, 1416, 2832), ("test", 4732, 2366, 4732), ("train", 11342, 5665, 11330)],
)
def test_the_releases_pairs_are_pinned(split: str, rows: int, pairs: int, beside: int) -> None:
    ds = load_dataset("csts", split, archive=SHARED_ARCHIVE, password_file=SHARED_PASSWORD)
    ids = pair_ids(ds.examples)
    assert (len(ids), len(set(ids.values()))) == (rows, pairs)
    assert sum(ids[i] == str(2 * (int(i) // 2)) for i in ids) == beside  # the fallback of groups_of for old runs
    sizes = Counter(Counter(ids.values()).values())
    assert sum(size * count for size, count in sizes.items()) == rows and min(sizes) >= 2
