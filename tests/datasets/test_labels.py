"""Tu et al. 2024 re-annotated labels: matched by row, invalid conditions left out, a stable 70/30 split."""

from __future__ import annotations

import dataclasses

import pytest

from harness.datasets.labels import apply_label_set, load_reannotated, reannotated_test_ids, take_subset
from harness.datasets.load import load_dataset
from harness.reporting.datasets import csts_label_agreement
from harness.types import Dataset, Example, HarnessError
from tests.conftest import SHARED_ARCHIVE, SHARED_PASSWORD, requires_shared


def _validation(n: int = 2834) -> Dataset:
    examples = tuple(Example(str(i), f"a {i}", f"b {i}", "c", float(i % 5 + 1)) for i in range(n))
    return Dataset("csts", "validation", examples, (), (1.0, 5.0))


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
