"""--shot-sampler reference against a re-statement of princeton-nlp/c-sts utils/fewshot/generate_in_context_dataset.py.

The re-statement below follows the published script line for line where it chooses shots: `random.seed(seed)`
once in make_dataset(), get_idx_pairs() over the train rows, then add_in_context_examples() over train,
validation and test in that order, with the script's own expressions for the draws. Data are synthetic.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from harness.cli.main import main
from harness.config.settings import RunConfig
from harness.datasets.choose import load_dataset
from harness.prompting.fewshot import REFERENCE_SEED, ReferencePicker, make_picker
from harness.types import Example
from tests.conftest import SHARED, SHARED_ARCHIVE, SHARED_PASSWORD, requires_shared, write_synthetic_csts

GOLDEN = SHARED / "golden" / "reference_prompts.jsonl"

# --- the re-statement (rows are dicts, as the script's datasets.Dataset rows) ------------------------------------


def get_idx_pairs(dataset: list[dict[str, Any]]) -> list[list[int]]:
    pairs: dict[str, list[int]] = defaultdict(list)
    for ix, datum in enumerate(dataset):
        pairs[datum["sentence1"] + "<-SEP->" + datum["sentence2"]].append(ix)
    for pair_idx in list(pairs.keys()):
        if len(pairs[pair_idx]) != 2:
            pairs.pop(pair_idx)
    return [sorted(pairs[x], key=lambda idx: -dataset[idx]["label"]) for x in pairs]


def add_in_context_examples(dataset: list[Any], context_dataset: list[Any], k: int, pairs: Any) -> list[list[int]]:
    context_ids = []
    for ix, _entry in enumerate(dataset):
        if pairs is not None:
            random_pairs = random.sample(range(len(pairs)), k=(k + 1) // 2)
            context_example_ids = [x for pair in random_pairs for x in pairs[pair]][:k]
        else:
            context_example_ids = random.sample(list(set(range(len(context_dataset))) - {ix}), k=k)
        context_ids.append(context_example_ids)
    return context_ids


def make_dataset(splits: dict[str, list[dict[str, Any]]], k: int, seed: int, is_stsb: bool) -> dict[str, list]:
    random.seed(seed)
    pairs = None if is_stsb else get_idx_pairs(splits["train"])
    out = {"train": add_in_context_examples(splits["train"], splits["train"], k, pairs)}
    for name in ("validation", "test"):
        if name in splits:
            out[name] = add_in_context_examples(splits[name], splits["train"], k, pairs)
    return out


# --- helpers ---------------------------------------------------------------------------------------------------


def rows(examples: tuple[Example, ...] | list[Example]) -> list[dict[str, Any]]:
    return [
        {"sentence1": e.sentence1, "sentence2": e.sentence2, "condition": e.condition, "label": e.label or -1.0}
        for e in examples
    ]


def csts_splits(tmp_path: Path) -> dict[str, tuple[Example, ...]]:
    d = write_synthetic_csts(tmp_path / "csts", n_train=30, n_val=9, n_test=7)
    # a train pair with three conditions and one with one: the reference drops both from its pairs
    with open(d / "csts_train.csv", "a", encoding="utf-8") as f:
        f.write("lone s1,lone s2,c,3\n" + "".join(f"tri s1,tri s2,c{i},{i + 1}\n" for i in range(3)))
    return {s: load_dataset("csts", s, data_dir=d).examples for s in ("train", "validation", "test")}


def stsb_like(n: int, tag: str) -> tuple[Example, ...]:
    return tuple(Example(str(i), f"{tag} a {i}", f"{tag} b {i}", "", float(i % 6)) for i in range(n))


@pytest.mark.parametrize("k", [1, 2, 3, 4, 6])
@pytest.mark.parametrize("seed", [42, 7])
def test_csts_matches_the_script_query_for_query_in_every_split(tmp_path: Path, k: int, seed: int) -> None:
    splits = csts_splits(tmp_path)
    expected = make_dataset({s: rows(e) for s, e in splits.items()}, k, seed, is_stsb=False)
    sizes = {s: len(e) for s, e in splits.items()}
    for split in ("train", "validation", "test"):
        picker = ReferencePicker("csts", splits["train"], split, sizes, seed, paired=True)
        got = [[int(s.id) for s in picker.pick(q, k)] for q in splits[split]]
        assert got == expected[split], split


@pytest.mark.parametrize("k", [1, 2, 5])
def test_stsb_matches_the_script_including_its_own_index_exclusion(k: int) -> None:
    train, validation = stsb_like(40, "t"), stsb_like(15, "v")
    expected = make_dataset({"train": rows(train), "validation": rows(validation)}, k, 42, is_stsb=True)
    sizes = {"train": 40, "validation": 15}
    for split, examples in (("train", train), ("validation", validation)):
        picker = ReferencePicker("stsb", train, split, sizes, 42, paired=False)
        got = [[int(s.id) for s in picker.pick(q, k)] for q in examples]
        assert got == expected[split], split
    # the script never gives train row ix to train query ix
    picker = ReferencePicker("stsb", train, "train", sizes, 42, paired=False)
    assert all(q.id not in {s.id for s in picker.pick(q, k)} for q in train)


def test_large_stsb_pool_uses_the_same_draws_as_the_literal_list() -> None:
    """Above random.sample's small-population threshold the draw indexes the population: same result."""
    train = stsb_like(300, "t")
    expected = make_dataset({"train": rows(train)}, 8, 42, is_stsb=True)["train"]
    picker = ReferencePicker("stsb", train, "train", {"train": 300}, 42, paired=False)
    assert [[int(s.id) for s in picker.pick(q, 8)] for q in train] == expected


def test_limit_takes_the_first_queries_of_the_full_walk(tmp_path: Path) -> None:
    """As the script's --max_eval_samples: shots are drawn over the whole split, then the first N kept."""
    d = write_synthetic_csts(tmp_path / "csts", n_train=25, n_val=8, n_test=6)
    base = ["--model", "overlap", "--data-dir", str(d), "--shots", "4", "--shot-sampler", "reference"]
    assert main([*base, "--results-dir", str(tmp_path / "r"), "--run-id", "all", "--no-progress"]) == 0
    assert main([*base, "--results-dir", str(tmp_path / "r"), "--run-id", "lim", "--limit", "3"]) == 0

    def ids(run: str) -> list[list[str]]:
        return [json.loads(x)["shot_ids"] for x in (tmp_path / "r" / run / "samples.jsonl").read_text().splitlines()]

    assert ids("lim") == ids("all")[:3]


def test_cli_reference_sampler_writes_the_scripts_shot_ids(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    d = write_synthetic_csts(tmp_path / "csts", n_train=25, n_val=8, n_test=6)
    args = ["--model", "overlap", "--data-dir", str(d), "--shots", "3", "--results-dir", str(tmp_path / "r")]
    assert main([*args, "--shot-sampler", "reference", "--run-id", "ref", "--no-progress"]) == 0
    assert main([*args, "--shot-sampler", "seeded", "--run-id", "seeded", "--no-progress"]) == 0
    assert main([*args, "--run-id", "default", "--no-progress"]) == 0
    splits = {s: load_dataset("csts", s, data_dir=d).examples for s in ("train", "validation")}
    expected = make_dataset({s: rows(e) for s, e in splits.items()}, 3, REFERENCE_SEED, is_stsb=False)["validation"]

    def shot_ids(run: str) -> list[list[int]]:
        lines = (tmp_path / "r" / run / "samples.jsonl").read_text().splitlines()
        return [[int(i) for i in json.loads(line)["shot_ids"]] for line in lines]

    assert shot_ids("ref") == expected
    assert shot_ids("default") == expected  # the default is the reference code's stream
    assert shot_ids("seeded") != expected  # a different (per-query) stream
    config = json.loads((tmp_path / "r" / "ref" / "config.json").read_text())
    assert config["shot_sampler"] == "reference"


def test_cli_reference_sampler_on_test_split_walks_validation_first(tmp_path: Path) -> None:
    d = write_synthetic_csts(tmp_path / "csts", n_train=25, n_val=8, n_test=6)
    args = ["--model", "overlap", "--data-dir", str(d), "--shots", "2", "--split", "test"]
    assert main([*args, "--shot-sampler", "reference", "--results-dir", str(tmp_path / "r"), "--run-id", "t"]) == 0
    splits = {s: load_dataset("csts", s, data_dir=d).examples for s in ("train", "validation", "test")}
    expected = make_dataset({s: rows(e) for s, e in splits.items()}, 2, REFERENCE_SEED, is_stsb=False)["test"]
    lines = (tmp_path / "r" / "t" / "samples.jsonl").read_text().splitlines()
    assert [[int(i) for i in json.loads(x)["shot_ids"]] for x in lines] == expected


def test_unknown_sampler_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["--model", "overlap", "--dataset", "stsb", "--shot-sampler", "nope"]) == 2


def test_all_but_is_the_reference_codes_set_difference_for_every_row() -> None:
    """`list(set(range(n)) - {ix})`, including rows past the pool's end (a split longer than train)."""
    from harness.prompting.fewshot import _AllBut

    for n in (1, 5):
        for ix in range(-1, n + 2):
            want = list(set(range(n)) - {ix})
            got = _AllBut(n, ix)
            assert len(got) == len(want) and [got[i] for i in range(len(got))] == want, (n, ix)
            assert got[:] == want and (not want or got[-1] == want[-1])
            with pytest.raises(IndexError):
                got[len(want)]


@requires_shared
def test_the_default_sampler_gives_every_golden_prompt_its_shots() -> None:
    """`--shots k` with no sampler named draws what the reference code drew (shared/golden/reference_prompts.jsonl
    records its `shot_rows` per query: C-STS and STS-B validation, k = 2 and 4), whatever --limit keeps."""
    cases = [json.loads(line) for line in GOLDEN.read_text().splitlines()]
    assert sum(c["shots"] > 0 for c in cases) == 330
    for name, archive in (("csts", {"archive": SHARED_ARCHIVE, "password_file": SHARED_PASSWORD}), ("stsb", {})):
        config = RunConfig(model="overlap", dataset=name, limit=3, **archive)  # type: ignore[arg-type]
        ds = load_dataset(name, "validation", **archive)  # type: ignore[arg-type]
        picker = make_picker(config, ds)
        got = {(c["query_row"], c["shots"]): [int(s.id) for s in picker.pick(ds.examples[c["query_row"]], c["shots"])]
               for c in cases if c["dataset"] == name and c["shots"] > 0}  # fmt: skip
        golden = {(c["query_row"], c["shots"]): c["shot_rows"] for c in cases if c["dataset"] == name and c["shots"]}
        assert got == golden
