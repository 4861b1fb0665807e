"""Labels files of one's own (`--labels FILE`, as `run_eval.py reannotate` writes them): format, round trip, and
what applying one does to a split (its rows, labels, conditions and data hashes)."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

import pytest

from harness.datasets import DATASETS
from harness.datasets.labels import (
    apply_label_set,
    conditions_hash,
    label_set_name,
    labels_tsv,
    read_labels_file,
)
from harness.types import Dataset, Example, HarnessError


def _split(n: int = 6, name: str = "csts", split: str = "train") -> Dataset:
    examples = tuple(Example(str(i), f"a {i}", f"b {i}", f"The cond {i}.", float(i % 5 + 1)) for i in range(n))
    return Dataset(name, split, examples, (), (1.0, 5.0), {"csts_train.csv": "abc"}, DATASETS[name].conditions)


def test_labels_tsv_round_trips_with_and_without_conditions(tmp_path: Path) -> None:
    labels = {"0": 3, "1": None, "2": 5}
    conditions = {"0": "colour of\tshirt ", "1": "number of people", "2": "type of room"}
    path = tmp_path / "l.tsv"
    path.write_text(labels_tsv(labels, conditions))
    f = read_labels_file(path)
    assert f.labels == {"0": 3.0, "1": None, "2": 5.0}
    assert f.conditions == {"0": "colour of shirt", "1": "number of people", "2": "type of room"}  # one line
    assert f.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    path.write_text(labels_tsv(labels))
    assert path.read_text() == "uid\treannotated-label\n0\t3\n1\t-1\n2\t5\n"  # the bundled file's format
    assert read_labels_file(path).conditions == {}


def test_applying_a_file_relabels_its_rows_and_records_a_new_data_version(tmp_path: Path) -> None:
    path = tmp_path / "mine.tsv"
    path.write_text(labels_tsv({"0": 5, "2": None, "3": 1}, {"0": "new 0", "2": "new 2", "3": "new 3"}))
    ds, left_out = apply_label_set(_split(), str(path))
    assert [(e.id, e.label, e.condition) for e in ds.examples] == [("0", 5.0, "new 0"), ("3", 1.0, "new 3")]
    assert left_out == {"not in the labels file": 3, "invalid condition (-1)": 1}
    assert ds.file_hashes["csts_train.csv"] == "abc"  # the split's own hash stays beside
    assert ds.file_hashes["labels:mine.tsv"] == hashlib.sha256(path.read_bytes()).hexdigest()
    # The conditions' own hash: by value, so the same conditions in another file have the same version.
    want = hashlib.sha256(b"0\tnew 0\n2\tnew 2\n3\tnew 3\n").hexdigest()
    assert ds.file_hashes["conditions"] == conditions_hash({"3": "new 3", "0": "new 0", "2": "new  2"}) == want
    path.write_text(labels_tsv({"0": 5, "3": 1}))
    assert "conditions" not in apply_label_set(_split(), str(path))[0].file_hashes


def test_uids_order_numerically_in_the_conditions_hash() -> None:
    assert conditions_hash({"10": "x", "9": "y"}) == hashlib.sha256(b"9\ty\n10\tx\n").hexdigest()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("uid\treannotated-label\n9\t3\n", "uid 9 is not a row of the csts train split"),
        ("uid\treannotated-label\tcondition\n0\t3\t \n", "line 2: empty condition"),
        ("uid\treannotated-label\n0\t3\n0\t4\n", "line 3: uid 0 appears twice"),
        ("uid\treannotated-label\tcondition\n0\t3\n", "line 2: expected 3 fields, got 2"),
        ("uid\tlabel\tcond\n0\t3\tx\n", "expected the header"),
        ("uid\treannotated-label\n0\t7\n", "label 7 is outside the 1-5 scale"),
    ],
)
def test_a_bad_labels_file_is_one_error(tmp_path: Path, body: str, message: str) -> None:
    path = tmp_path / "bad.tsv"
    path.write_text(body)
    with pytest.raises(HarnessError, match=message):
        apply_label_set(_split(), str(path))


def test_conditions_only_where_the_dataset_has_them(tmp_path: Path) -> None:
    path = tmp_path / "c.tsv"
    path.write_text(labels_tsv({"0": 3}, {"0": "x"}))
    stsb = dataclasses.replace(_split(), name="stsb", label_range=(0.0, 5.0), conditions=False)
    with pytest.raises(HarnessError, match="has conditions, but stsb has none"):
        apply_label_set(stsb, str(path))


def test_a_missing_file_or_unknown_set_is_one_error(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match="unknown label set '.*gold'; choose from original, reannotated, or a"):
        apply_label_set(_split(), str(tmp_path / "gold"))


def test_run_ids_name_a_file_by_its_stem() -> None:
    assert label_set_name("reannotated") == "reannotated"
    assert label_set_name("labels/gpt-4o-validation.tsv") == "labels-gpt-4o-validation"
