"""A user's dataset file (harness/datasets/files.py): read into the same Examples as a shipped dataset, and every
bad file one `error:` line, exit 2, nothing written (issue 43).

The two toy datasets live only here: tests/datasets/toy_sts (CSV, no condition) and tests/datasets/toy_conditions
(JSONL, each sentence pair under two aspects).
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.config.settings import RunConfig
from harness.datasets import DATASETS
from harness.datasets.choose import describe_dataset, load_dataset, run_description
from harness.datasets.load import pair_key
from harness.prompting.fewshot import make_picker
from harness.types import HarnessError

HERE = Path(__file__).parent
TOY = HERE / "toy_sts" / "toy.toml"
CONDITIONS = HERE / "toy_conditions" / "toy.toml"
# What adding a dataset took (docs/extending.md "A new dataset" lists them): its own files, nothing in the package.
DOCUMENTED = ("tests/datasets/toy_sts/toy.toml", "tests/datasets/toy_sts/dev.csv")


def test_a_csv_dataset_file_reads_its_mapped_columns() -> None:
    ds = load_dataset(str(TOY), "validation")
    with open(HERE / "toy_sts" / "dev.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(e.sentence1, e.sentence2, e.label) for e in ds.examples] == [
        (r["text_a"], r["text_b"], float(r["score"])) for r in rows
    ]
    assert [e.id for e in ds.examples] == [str(i) for i in range(len(rows))]
    with open(HERE / "toy_sts" / "train.csv", newline="") as f:
        assert [e.sentence1 for e in ds.pool] == [r["text_a"] for r in csv.DictReader(f)]  # the few-shot pool
    assert (ds.name, ds.label_range, ds.conditions) == ("toy-sts", (0.0, 4.0), False)
    assert ds.file_hashes == {
        name: hashlib.sha256((HERE / "toy_sts" / name).read_bytes()).hexdigest()
        for name in ("toy.toml", "dev.csv", "train.csv")
    }


def test_a_jsonl_dataset_with_conditions_is_read_like_csts() -> None:
    described = describe_dataset(str(CONDITIONS))
    assert (described.conditions, described.templates, described.file.name) == (True, "csts", "toy-conditions")  # type: ignore[union-attr]
    ds = load_dataset(str(CONDITIONS), "validation")
    lines = [json.loads(x) for x in (HERE / "toy_conditions" / "dev.jsonl").read_text().splitlines()]
    assert [(e.sentence1, e.condition, e.label) for e in ds.examples] == [
        (r["s1"], r["aspect"], float(r["rating"])) for r in lines
    ]
    assert ds.conditions
    # Deshpande et al. 2023, §6, as for C-STS: k=2 shots are both conditions of one sentence pair, higher label first
    picker = make_picker(RunConfig(model="m", dataset=str(CONDITIONS)), ds)
    shots = picker.pick(ds.examples[0], 2)
    assert pair_key(shots[0]) == pair_key(shots[1]) != pair_key(ds.examples[0])
    assert {shots[0].condition, shots[1].condition} == {"the animals", "the weather"}
    assert shots[0].label >= shots[1].label  # type: ignore[operator]


def test_a_recorded_run_keeps_what_its_file_said() -> None:
    """A report elsewhere, without the file, still knows it has conditions and may be shared; a bare record is
    treated as private text."""
    assert run_description({"dataset": "csts"}) == DATASETS["csts"]
    recorded = {"dataset": "mine", "dataset_file": {"conditions": True, "private": False}}
    assert (run_description(recorded).display, run_description(recorded).conditions) == ("mine", True)
    assert run_description(recorded).private is False
    assert run_description({"dataset": "mine"}).private is True


def _copy(tmp: Path, toml: str | None = None, **files: str) -> Path:
    """The toy dataset in a folder of its own, its TOML or split files replaced."""
    folder = tmp / "data"
    shutil.copytree(HERE / "toy_sts", folder)
    if toml is not None:
        (folder / "toy.toml").write_text(toml)
    for name, text in files.items():
        (folder / name.replace("_", ".")).write_text(text)
    return folder / "toy.toml"


TOML = TOY.read_text()
BAD: list[tuple[str, Callable[[Path], Path], str]] = [
    (
        "a column the files lack",
        lambda t: _copy(t, TOML.replace('label = "score"', 'label = "rating"')),
        r"dev.csv row 2: no column 'rating' \(label\) \(mapped in .*toy.toml\); it has text_a, text_b, score$",
    ),
    (
        "labels outside its range",
        lambda t: _copy(t, TOML.replace("labels = [0, 4]", "labels = [0, 2]")),
        r"dev.csv row 2: label 2.67 is outside the 0-2 scale$",
    ),
    ("an empty split file", lambda t: _copy(t, dev_csv=""), r"dev.csv is empty \(expected a header row\)$"),
    ("a header and no rows", lambda t: _copy(t, dev_csv="text_a,text_b,score\n"), r"dev.csv has no rows"),
    ("an empty dataset file", lambda t: _copy(t, ""), r"toy.toml: labels must be the scale's two ends"),
    ("an unknown key", lambda t: _copy(t, "scale = 5\n" + TOML), r"unknown key\(s\) scale; it takes name, labels"),
    (
        "a shipped name",
        lambda t: _copy(t, TOML.replace('"toy-sts"', '"stsb"')),
        r"name 'stsb' is a shipped dataset's \(csts, stsb\)$",
    ),
    ("a missing split file", lambda t: _copy(t, TOML.replace("dev.csv", "nope.csv")), r"validation .*does not exist$"),
    (
        "C-STS templates without a condition",
        lambda t: _copy(t, 'templates = "csts"\n' + TOML),
        r"templates 'csts' show a condition; map columns.condition or use stsb$",
    ),
    ("not TOML", lambda t: _copy(t, "labels = [0,"), r"toy.toml: not valid TOML"),
]


@pytest.mark.parametrize(("why", "setup", "message"), BAD, ids=[b[0] for b in BAD])
def test_a_bad_dataset_file_is_one_line_exit_2_and_nothing_written(
    why: str, setup: Callable[[Path], Path], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    toml = setup(tmp_path)
    results = tmp_path / "results"
    assert main(["--dataset", str(toml), "--model", "overlap", "--results-dir", str(results), "--no-progress"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("error: "), err
    assert re.search(message, err.strip()), err
    assert not results.exists()
    with pytest.raises(HarnessError):  # the same through the loader, for every command that takes --dataset
        load_dataset(str(toml), "validation")
