"""Published numbers: which row a run matches, and whether the run may be set against it."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.reporting.published import SPLIT_SIZES, load_published, match, not_comparable
from harness.types import HarnessError

PAPER = {"scoring": "parsed", "parse": "first-number", "max_tokens": 20, "stop": None, "chat": True}


def _gpt4() -> object:
    row = match(load_published(), "gpt-4-0314", "csts", "validation", "long", 4)
    assert row is not None
    return row


def test_model_ids_match_published_names_through_the_alias_table() -> None:
    published = load_published()
    assert match(published, "gpt-4", "csts", "validation", "long", 4).spearman == 42.38  # type: ignore[union-attr]
    assert match(published, "gpt-4o", "csts", "validation", "long", 4) is None  # not an alias: no guess
    assert match(published, "gpt-4", "csts", "validation", "long", 3) is None


@pytest.mark.parametrize(
    ("n", "errors", "identity", "note"),
    [
        (2834, 0, PAPER, None),
        (9, 0, PAPER, "not comparable (n=9 of 2,834)"),
        (2833, 1, PAPER, "not comparable (n=2,833 of 2,834; 1 failed request)"),
        (2834, 0, PAPER | {"scoring": "expected"}, "not comparable (scoring=expected (paper: parsed))"),
        (2834, 0, PAPER | {"chat": False}, "not comparable (chat=False (paper: True))"),
        (2834, 0, PAPER | {"max_tokens": 5}, "not comparable (max_tokens=5 (paper: 20))"),
        (2834, 0, PAPER | {"stop": []}, None),  # no stop sequence, however written
    ],
)
def test_only_a_whole_split_without_failures_under_the_papers_protocol_is_comparable(
    n: int, errors: int, identity: dict, note: str | None
) -> None:
    assert not_comparable(_gpt4(), n, errors, identity) == note  # type: ignore[arg-type]


def test_a_dry_run_is_never_comparable() -> None:
    assert not_comparable(_gpt4(), 0, 0, PAPER, dry_run=True) == "not comparable (dry run, no answers)"  # type: ignore[arg-type]


def test_every_published_setting_has_a_known_split_size() -> None:
    for p in load_published():
        assert (p.dataset, p.split, p.labels) in SPLIT_SIZES, p


def test_open_models_were_sent_raw_text() -> None:
    row = match(load_published(), "google/flan-t5-xl", "csts", "validation", "long", 4)
    assert row is not None
    assert not_comparable(row, 2834, 0, PAPER | {"chat": False}) is None
    assert not_comparable(row, 2834, 0, PAPER | {"chat": True}) == "not comparable (chat=True (paper: False))"


def test_a_malformed_published_file_is_one_error(tmp_path: Path) -> None:
    bad = tmp_path / "p.csv"
    bad.write_text("source,dataset\nx,csts\n")
    with pytest.raises(HarnessError, match="malformed published results"):
        load_published(bad)
