"""Published numbers: which row a run matches, and whether the run may be set against it."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.datasets import DATASETS
from harness.reporting.published import OTHER_SPLITS, SPLIT_SIZES, load_published, match, not_comparable
from harness.types import HarnessError

GPT_TOKENS = "20; the released code's GPT call: 5"
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
        (2834, 0, PAPER | {"max_tokens": 5}, None),  # the released code's GPT call (openai_utils.py: max_tokens=5)
        (2834, 0, PAPER | {"max_tokens": 10}, f"not comparable (max_tokens=10 (paper: {GPT_TOKENS}))"),
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
        assert (p.dataset, p.split, p.labels) in SPLIT_SIZES | OTHER_SPLITS, p


def test_the_datasets_with_published_numbers_are_those_the_table_says() -> None:
    """DATASETS' `published` (harness/datasets/__init__.py) is what paper_results.csv holds, no more, no less."""
    assert {p.dataset for p in load_published()} == {name for name, d in DATASETS.items() if d.published}


def test_open_models_were_sent_raw_text() -> None:
    row = match(load_published(), "google/flan-t5-xl", "csts", "validation", "long", 4)
    assert row is not None
    t5 = PAPER | {"truncate_input": 512}  # the reference code's T5 tokenizer cut inputs at 512 tokens
    assert not_comparable(row, 2834, 0, t5 | {"chat": False}) is None
    assert not_comparable(row, 2834, 0, t5 | {"chat": True}) == "not comparable (chat=True (paper: False))"


def test_a_malformed_published_file_is_one_error(tmp_path: Path) -> None:
    bad = tmp_path / "p.csv"
    bad.write_text("source,dataset\nx,csts\n")
    with pytest.raises(HarnessError, match="malformed published results"):
        load_published(bad)


def test_split_sizes_are_the_data_we_ship_and_the_papers_test_split() -> None:
    """Each size derived from the data itself (C-STS test: Deshpande et al. 2023 Table 1, 4,732 rows)."""
    from harness.datasets.choose import load_dataset
    from harness.datasets.labels import SUBSET_SPLITS, load_reannotated, reannotated_test_ids

    labels = load_reannotated()
    valid = [uid for uid, label in labels.items() if label is not None]
    test_part = reannotated_test_ids(valid)
    assert SPLIT_SIZES[("csts", "validation", "original")] == len(labels) == 2834
    assert SPLIT_SIZES[("csts", "validation", "reannotated")] == len(valid) == 2620
    assert SPLIT_SIZES[("csts", "test", "original")] == 4732
    assert SPLIT_SIZES[("stsb", "validation", "original")] == len(load_dataset("stsb", "validation").examples)
    for labelled in ("original", "reannotated"):
        assert SPLIT_SIZES[("csts", SUBSET_SPLITS["reannotated-test"], labelled)] == len(test_part) == 786
        assert SPLIT_SIZES[("csts", SUBSET_SPLITS["reannotated-train"], labelled)] == len(valid) - len(test_part)


def test_a_stop_sequence_or_another_parse_is_named() -> None:
    row = _gpt4()
    assert not_comparable(row, 2834, 0, PAPER | {"stop": ["###"]}) == "not comparable (stop=['###'] (paper: None))"  # type: ignore[arg-type]
    assert not_comparable(row, 2834, 0, PAPER | {"parse": "strict"}) == (  # type: ignore[arg-type]
        "not comparable (parse=strict (paper: first-number))"
    )
    assert not_comparable(row, 2834, 0, {}) is None  # type: ignore[arg-type]  # settings not recorded: the paper's
    assert not_comparable(row, 2834, 2, PAPER) == "not comparable (2 failed requests)"  # type: ignore[arg-type]


def test_a_published_row_of_unknown_size_is_never_comparable() -> None:
    from dataclasses import replace

    row = replace(_gpt4(), split="somewhere")  # type: ignore[type-var]
    assert not_comparable(row, 2834, 0, PAPER) == "not comparable (size of somewhere unknown)"


def test_published_file_defaults_and_blank_numbers(tmp_path: Path) -> None:
    head = "source,dataset,split,model,instr,shots,invalid_pct,pearson,spearman"
    path = tmp_path / "p.csv"
    path.write_text(f"{head}\nT,csts,validation,GPT-4,long,4,,40.5, \n")
    (row,) = load_published(path)
    assert (row.shots, row.invalid_pct, row.pearson, row.spearman) == (4, None, 40.5, None)
    assert (row.variant, row.labels) == ("sentences", "original")
    path.write_text(f"{head},variant,labels\nT,csts,validation,GPT-4,long,4,1,2,3,qa,reannotated\n")
    (row,) = load_published(path)
    assert (row.variant, row.labels, row.invalid_pct) == ("qa", "reannotated", 1.0)
    with pytest.raises(HarnessError, match="cannot read published results"):
        load_published(tmp_path / "absent.csv")


def test_published_names_cover_both_names_of_one_model() -> None:
    from harness.reporting.published import published_names

    assert published_names("GPT-3.5-Turbo") == {"GPT-3.5", "ChatGPT-3.5"}
    assert published_names("gpt-4-0314") == {"GPT-4"}
    assert published_names("gpt-4o") == set()


def test_tus_two_gpt35_snapshots_are_both_accepted_and_the_verdict_says_so() -> None:
    # Tu et al. 2024 name gpt-3.5-turbo-1106 in §4.1 and gpt-3.5-turbo-0125 in Table 8 (pricing of the models
    # "used in the paper"). Before, 0125 matched no published row at all, and as served it was "not comparable".
    from harness.reporting.paper_settings import matched

    published = load_published()
    tu = {"dataset": "csts", "split": "reannotated-test-30pct", "instr": "short", "shots": 0}
    tu |= {"labels": "reannotated"}
    rows = [match(published, m, **tu) for m in ("gpt-3.5-turbo-0125", "gpt-3.5-turbo-1106", "gpt-3.5-turbo-0301")]
    assert [r.source if r else None for r in rows] == ["Tu et al. 2024, Table 4"] * 3
    row = rows[0]
    assert row is not None and row.model == "GPT-3.5"
    base = PAPER | {"template": "tu-base", "temperature": 0.0}
    assert not_comparable(row, 786, 0, base | {"model": "gpt-3.5-turbo-0125"}) is None
    assert not_comparable(row, 786, 0, base | {"model": "gpt-3.5-turbo", "served_model": "gpt-3.5-turbo-0125"}) is None
    assert not_comparable(row, 786, 0, base | {"model": "gpt-3.5-turbo-0301"}) == (
        "not comparable (model=gpt-3.5-turbo-0301 (paper: gpt-3.5-turbo-1106 or gpt-3.5-turbo-0125))"
    )
    assert matched(row.source, row.model, row.instr, 0, row.variant) == (
        "comparable: every setting as published (template tu-base, gpt-3.5-turbo-1106 or gpt-3.5-turbo-0125 "
        "(the paper names both: either accepted), Deshpande et al.'s token budget, temperature and parse assumed "
        "(Tu et al. state none))"
    )
    qa = match(published, "gpt-4-0125-preview", **tu, variant="qa-answers")
    assert qa is not None
    answers = PAPER | {"template": "qa", "model": "gpt-4-0125-preview"}
    assert not_comparable(qa, 786, 0, answers | {"answer_model": "gpt-3.5-turbo-0125"}) is None


def test_a_tu_cell_says_its_protocol_is_deshpandes_assumed() -> None:
    # Tu et al. state no token budget, temperature or parsing rule: the harness judges their rows by Deshpande et
    # al.'s protocol and says so where a difference is shown; a Deshpande et al. row's verdict is unchanged.
    published = load_published()
    tu = match(published, "gpt-4-0125-preview", "csts", "reannotated-test-30pct", "short", 0, labels="reannotated")
    assert tu is not None
    base = PAPER | {"template": "tu-base", "model": "gpt-4-0125-preview"}
    assert not_comparable(tu, 786, 0, base | {"temperature": 0.7, "max_tokens": 50, "parse": "last-number"}) == (
        "not comparable (parse=last-number (paper: first-number; Deshpande et al.'s, Tu et al. state none); "
        "temperature=0.7 (paper: 0.0; Deshpande et al.'s, Tu et al. state none); "
        f"max_tokens=50 (paper: {GPT_TOKENS}; Deshpande et al.'s, Tu et al. state none))"
    )
    assert not_comparable(_gpt4(), 2834, 0, PAPER | {"temperature": 0.7, "model": "gpt-4-0314"}) == (  # type: ignore[arg-type]
        "not comparable (temperature=0.7 (paper: 0.0))"
    )


def test_a_sampled_run_names_each_difference_once() -> None:
    # temperature and repeats are in the protocol and were also judged against their declared defaults: each
    # difference was listed twice ("temperature=0.7 (paper: 0.0); ...; temperature=0.7 (paper: 0.0)")
    from harness.reporting.paper_settings import published_settings

    identity = PAPER | {"temperature": 0.7, "repeats": 3, "model": "gpt-4-0314"}
    identity |= {"published": published_settings({"temperature": 0.7, "repeats": 3})}
    assert not_comparable(_gpt4(), 2834, 0, identity) == (  # type: ignore[arg-type]
        "not comparable (temperature=0.7 (paper: 0.0); repeats=3 (paper: 1))"
    )
