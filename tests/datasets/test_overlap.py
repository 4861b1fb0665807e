"""Overlap between the few-shot pool and the evaluated split, by kind, as counts and % of the evaluated side."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli.main import main
from harness.datasets.choose import load_dataset
from harness.datasets.overlap import overlap
from harness.types import Example
from tests.conftest import SHARED_ARCHIVE, SHARED_PASSWORD, requires_shared


def _ex(i: int, s1: str, s2: str, cond: str) -> Example:
    return Example(str(i), s1, s2, cond, 3.0)


def _counts(pool: list[Example], evaluated: list[Example]) -> dict[str, tuple[int, int]]:
    return {o.kind: (o.shared, o.evaluated) for o in overlap(pool, evaluated)}


def test_known_overlaps_are_counted_per_kind() -> None:
    pool = [_ex(0, "A", "B", "colour"), _ex(1, "C", "D", "size")]
    evaluated = [
        _ex(0, "B", "A", "colour"),  # the whole instance again, sentence order swapped
        _ex(1, "A", "E", "size"),  # sentence A and condition size seen, but never together with A
        _ex(2, "F", "G", "shape"),  # nothing seen
        _ex(3, "C", "H", "size"),  # (C, size) seen
    ]
    assert _counts(pool, evaluated) == {
        "sentences": (3, 7),  # A, B, C of A B C E F G H
        "conditions": (2, 3),  # colour, size of colour size shape
        "sentence-condition pairs": (3, 8),  # (B,colour) (A,colour) (C,size) of 8 distinct
        "sentence pairs (either order)": (1, 4),
        "instances (pair + condition)": (1, 4),
    }


def test_percent_is_of_the_evaluated_side() -> None:
    pool = [_ex(0, "A", "B", "c")]
    evaluated = [_ex(0, "A", "X", "d"), _ex(1, "Y", "Z", "d")]
    sentences = overlap(pool, evaluated)[0]
    assert sentences.pct == pytest.approx(100 * 1 / 4)


def test_stsb_has_no_conditions_to_compare() -> None:
    rows = overlap([Example("0", "A", "B", "", 1.0)], [Example("0", "A", "C", "", 2.0)])
    conditions = next(r for r in rows if r.kind == "conditions")
    assert conditions.evaluated == 0 and conditions.pct is None


def test_overlap_command_on_a_data_dir(csts_dir: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["overlap", "--pool", "train", "--eval", "validation", "--data-dir", str(csts_dir)]) == 0
    out = capsys.readouterr().out
    val = load_dataset("csts", "validation", csts_dir).examples
    train = load_dataset("csts", "train", csts_dir).examples
    sentences = overlap(train, val)[0]
    assert f"| sentences | {sentences.shared:,} | {sentences.evaluated:,} |" in out


@requires_shared
def test_real_train_vs_test_matches_zhang_et_al_2025_appendix_c() -> None:
    test = load_dataset("csts", "test", archive=SHARED_ARCHIVE, password_file=SHARED_PASSWORD)
    rows = {o.kind: o for o in overlap(test.pool, test.examples)}
    # Zhang et al. 2025, App. C: counts and % of the test side.
    published = {
        "sentences": (1196, 27.08),
        "conditions": (804, 40.75),
        "sentence-condition pairs": (185, 1.96),
        "sentence pairs (either order)": (9, 0.38),
        "instances (pair + condition)": (2, 0.042),
    }
    for kind, (count, pct) in published.items():
        assert rows[kind].shared == count, kind
        assert rows[kind].pct == pytest.approx(pct, abs=0.005), kind
