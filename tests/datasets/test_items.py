"""Which items a run scores (harness/datasets/items.py): a seeded sample pinned by golden ids, independent of the rows'
order, nested in a larger one; an id list in the split's order, its bad lines one error each."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

import pytest

from harness.datasets.choose import load_dataset
from harness.datasets.items import read_ids, select
from harness.types import Example, HarnessError

# STS-B validation (bundled, 1,500 items), --sample 500 --sample-seed 3: the first ids drawn, and all 500 as a digest.
GOLDEN_FIRST = ["0", "3", "5", "7", "10", "16", "23", "25", "34", "35", "37", "39"]


def _stsb() -> tuple[Example, ...]:
    return load_dataset("stsb", "validation", None, None, None).examples


def _digest(ids: list[str]) -> str:
    return hashlib.sha256("\n".join(ids).encode()).hexdigest()[:16]


def test_a_seeded_sample_draws_the_golden_ids() -> None:
    drawn = [e.id for e in select(_stsb(), sample=500, sample_seed=3)]
    assert len(drawn) == 500
    assert drawn[:12] == GOLDEN_FIRST
    assert _digest(drawn) == "b0ccea16d8e4cb36"
    assert drawn == sorted(drawn, key=int)  # in the split's order


def test_the_sample_does_not_depend_on_the_rows_order() -> None:
    rows = list(_stsb())
    random.Random(1).shuffle(rows)
    shuffled = select(tuple(rows), sample=500, sample_seed=3)
    assert sorted(e.id for e in shuffled) == sorted(e.id for e in select(_stsb(), sample=500, sample_seed=3))


def test_a_smaller_sample_is_inside_a_larger_one_and_seeds_differ() -> None:
    small = {e.id for e in select(_stsb(), sample=100, sample_seed=3)}
    large = {e.id for e in select(_stsb(), sample=500, sample_seed=3)}
    other = {e.id for e in select(_stsb(), sample=500, sample_seed=4)}
    assert small < large
    assert len(large & other) < 250  # another seed, another draw (about a third in common by chance)


def test_a_sample_as_large_as_the_split_is_the_split() -> None:
    assert select(_stsb(), sample=5000, sample_seed=3) == _stsb()


def test_limit_still_takes_the_first_rows() -> None:
    assert [e.id for e in select(_stsb(), limit=3)] == ["0", "1", "2"]


def test_an_id_list_is_scored_in_the_splits_order(tmp_path: Path) -> None:
    (tmp_path / "ids.txt").write_text("\ufeff12\n# a comment\n\n3  # the third row's id\n7\r\n")
    chosen = select(_stsb(), ids=tmp_path / "ids.txt")
    assert [e.id for e in chosen] == ["3", "7", "12"]
    assert chosen[0] == _stsb()[3]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1\n2 3\n", "line 2: one id per line, got '2 3'"),
        ("1\n1\n", "line 2: id 1 is listed twice (first on line 1)"),
        ("# nothing\n", "lists no id"),
        (b"\xff\xfe1", "is not UTF-8 text"),
    ],
)
def test_a_bad_id_list_is_one_error(tmp_path: Path, text: str | bytes, message: str) -> None:
    path = tmp_path / "ids.txt"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(HarnessError, match="^--ids file .*" + message.replace("(", r"\(").replace(")", r"\)")):
        read_ids(path)


def test_an_unknown_id_is_named_with_its_place(tmp_path: Path) -> None:
    (tmp_path / "ids.txt").write_text("4\n1500\n")
    with pytest.raises(HarnessError, match=r"id 1500 \(its 2nd id\) is not in stsb validation \(.*0-1499\)"):
        select(_stsb(), ids=tmp_path / "ids.txt", where="stsb validation")
