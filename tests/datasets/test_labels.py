"""Tu et al. 2024 re-annotated labels: matched by row, invalid conditions left out, a stable 70/30 split."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from harness.datasets.choose import load_dataset
from harness.datasets.labels import apply_label_set, load_reannotated, reannotated_test_ids, take_subset
from harness.reporting.datasets import csts_label_agreement
from harness.types import Dataset, Example, HarnessError
from tests.conftest import SHARED_ARCHIVE, SHARED_PASSWORD, requires_shared


def _validation(n: int = 2834) -> Dataset:
    examples = tuple(Example(str(i), f"a {i}", f"b {i}", "c", float(i % 5 + 1)) for i in range(n))
    return Dataset("csts", "validation", examples, (), (1.0, 5.0), conditions=True)


def test_vendored_file_has_every_validation_row() -> None:
    labels = load_reannotated()
    assert len(labels) == 2834 and list(labels)[:3] == ["0", "1", "2"]
    assert sum(v is None for v in labels.values()) == 214  # Tu et al. §3: 214 invalid conditions


def test_reannotated_set_leaves_out_invalid_conditions() -> None:
    relabelled, left_out = apply_label_set(_validation(), "reannotated")
    assert len(relabelled.examples) == 2620 and left_out == {"invalid condition (-1)": 214}
    labels = load_reannotated()
    assert all(e.label == labels[e.id] for e in relabelled.examples)
    assert "csts-val-reannotated.tsv" in relabelled.file_hashes


def test_row_count_mismatch_is_refused() -> None:
    with pytest.raises(HarnessError, match="matched by row order"):
        apply_label_set(_validation(100), "reannotated")


def test_only_csts_validation_has_reannotated_labels() -> None:
    with pytest.raises(HarnessError, match="only for the C-STS validation split"):
        apply_label_set(dataclasses.replace(_validation(), split="test"), "reannotated")


def test_unknown_label_set() -> None:
    with pytest.raises(HarnessError, match="unknown label set 'gold'"):
        apply_label_set(_validation(), "gold")


def test_split_is_thirty_percent_disjoint_and_complete() -> None:
    relabelled, _ = apply_label_set(_validation(), "reannotated")
    test = {e.id for e in take_subset(relabelled, "reannotated-test").examples}
    train = {e.id for e in take_subset(relabelled, "reannotated-train").examples}
    assert len(test) == 786 and not test & train
    assert test | train == {e.id for e in relabelled.examples}


def test_split_is_stable_and_seeded() -> None:
    ids = [str(i) for i in range(1000)]
    assert reannotated_test_ids(ids, 0) == reannotated_test_ids(list(reversed(ids)), 0)
    assert reannotated_test_ids(ids, 0) != reannotated_test_ids(ids, 1)


def test_subset_is_the_same_items_under_either_label_set() -> None:
    original = take_subset(_validation(), "reannotated-test")
    relabelled = take_subset(apply_label_set(_validation(), "reannotated")[0], "reannotated-test")
    assert [e.id for e in original.examples] == [e.id for e in relabelled.examples]
    assert [e.label for e in original.examples] != [e.label for e in relabelled.examples]


@requires_shared
def test_agreement_with_original_labels_matches_tu_et_al() -> None:
    ds = load_dataset("csts", "validation", archive=SHARED_ARCHIVE, password_file=SHARED_PASSWORD)
    result = csts_label_agreement(ds.examples)
    assert result["n"] == 2620
    assert result["spearman"] == pytest.approx(49.22, abs=0.1)  # §4.1 reports 49.22


def test_the_seeded_split_draws_pinned_ids() -> None:
    """Golden ids: a change to the hash, the seed's place in it, the rounding or the end taken fails here."""
    ids = [str(i) for i in range(10)]
    assert reannotated_test_ids(ids) == reannotated_test_ids(ids, 0) == {"3", "4", "7"}  # round(10 * 0.3) = 3
    assert reannotated_test_ids(ids, 5) == {"3", "4", "8"}
    assert reannotated_test_ids([str(i) for i in range(12)], 0) == {"3", "4", "7", "11"}  # round(3.6) = 4
    assert reannotated_test_ids([], 0) == frozenset()


def test_the_subset_seed_defaults_to_0() -> None:
    relabelled, _ = apply_label_set(_validation(), "reannotated")
    assert take_subset(relabelled, "reannotated-test") == take_subset(relabelled, "reannotated-test", 0)
    assert take_subset(relabelled, "reannotated-test") != take_subset(relabelled, "reannotated-test", 1)


def test_original_labels_and_all_items_are_the_dataset_itself() -> None:
    ds = _validation(10)
    assert apply_label_set(ds, "original") == (ds, {})
    assert take_subset(ds, "all") is ds


def test_subset_refusals() -> None:
    with pytest.raises(HarnessError, match="unknown subset 'half'; choose from all, reannotated-train"):
        take_subset(_validation(), "half")
    with pytest.raises(HarnessError, match="--subset reannotated-test exists only for the C-STS validation"):
        take_subset(dataclasses.replace(_validation(), name="stsb"), "reannotated-test")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("uid\tlabel\n0\t3\n", "expected the header 'uid<TAB>reannotated-label'"),
        ("", "expected the header"),
        ("uid\treannotated-label\n0\t3\t4\n", "line 2: expected 2 fields, got 3"),
        ("uid\treannotated-label\n0\t3\n1\tthree\n", "line 3: label 'three' is not a number"),
        ("uid\treannotated-label\n0\t5.5\n", "line 2: label 5.5 is outside the 1-5 scale"),
        ("uid\treannotated-label\n0\t0.99\n", "line 2: label 0.99 is outside the 1-5 scale"),
        ("uid\treannotated-label\n0\t-2\n", "line 2: label -2 is outside the 1-5 scale"),
    ],
)
def test_a_malformed_label_file_is_one_error_naming_the_line(tmp_path: Path, body: str, message: str) -> None:
    path = tmp_path / "labels.tsv"
    path.write_text(body)
    with pytest.raises(HarnessError, match=message):
        load_reannotated(path)


def test_label_file_ends_of_the_scale_and_invalid_marks(tmp_path: Path) -> None:
    path = tmp_path / "labels.tsv"
    path.write_text("uid\treannotated-label\n0\t1\n1\t5\n2\t-1\n3\t2.5\n")
    assert load_reannotated(path) == {"0": 1.0, "1": 5.0, "2": None, "3": 2.5}
    with pytest.raises(HarnessError, match="re-annotated labels .*absent.tsv does not exist"):
        load_reannotated(tmp_path / "absent.tsv")
