"""`run_eval.py reannotate-merge`: two models' `reannotate` outputs (written here by hand, as that command writes
them) and the original labels merged into Zhang et al. 2025's V(); its kappa judged beside the paper's 0.247, as
`reannotate` now judges both of the paper's figures (scoring/agreement.py judge_alpha, judge_kappa)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.datasets.choose import load_dataset
from harness.scoring.agreement import Setup, judge_alpha, judge_kappa

GPT = {"0": [3], "1": [5], "2": [None], "3": [2]}
CLAUDE = {"0": [5], "1": [5], "2": [None], "3": [None]}


def source(
    folder: Path, name: str, model: str, ratings: dict[str, list[int | None]], split: str = "validation"
) -> Path:
    """A labels file with the two sidecars `reannotate` writes beside it (only what the merge reads)."""
    folder.mkdir(parents=True, exist_ok=True)
    labels = folder / f"{name}.tsv"
    labels.write_text("uid\treannotated-label\n")
    replies = [
        {"step": "rating", "uid": u, "repeat": k, "value": v} for u, vs in ratings.items() for k, v in enumerate(vs)
    ]
    (folder / f"{name}.replies.jsonl").write_text("".join(json.dumps(r) + "\n" for r in replies))
    setup = {"chosen": "first", "rewritten_by": None}
    record = {"model": model, "split": split, "repeats": 1, "temperature": 0.0, "label": "mean", "setup": setup}
    (folder / f"{name}.agreement.json").write_text(json.dumps(record))
    return labels


def test_two_models_and_the_original_labels_merge_into_v(
    csts_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = source(tmp_path / "in", "gpt", "gpt-4o-2024-08-06", GPT)
    b = source(tmp_path / "in", "claude", "claude-3-7-sonnet-20250219", CLAUDE)
    out = tmp_path / "merged.tsv"
    argv = ["reannotate-merge", str(a), str(b), "--out", str(out), "--data-dir", str(csts_dir)]
    assert main(argv) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    human = {e.id: e.label for e in load_dataset("csts", "validation", data_dir=csts_dir).examples}
    # V() by hand: the mean of the original label and each model's valid rating, halves up; none: -1
    want = {
        "0": math.floor((human["0"] + 3 + 5) / 3 + 0.5),
        "1": math.floor((human["1"] + 5 + 5) / 3 + 0.5),
        "2": -1,
        "3": math.floor((human["3"] + 2) / 2 + 0.5),
    }
    lines = out.read_text().splitlines()
    assert lines[0] == "uid\treannotated-label"
    assert dict(line.split("\t") for line in lines[1:]) == {u: str(v) for u, v in want.items()}
    record = json.loads((tmp_path / "merged.agreement.json").read_text())
    assert record["models"] == ["gpt-4o-2024-08-06", "claude-3-7-sonnet-20250219"] and record["labelled"] == 3
    verdict = (
        "not comparable (split=validation (paper: train); rows=4 (part) (paper: all 24); conditions=original "
        "(paper: rewritten by GPT-4o, Train-Mod); temperature 0: the paper states none)"
    )
    assert record["published_verdicts"]["kappa_vs_original"] == verdict
    assert f"published (Zhang et al. 2025, §3): kappa vs original 0.247: {verdict}" in printed


@pytest.mark.parametrize(
    ("second", "message"),
    [
        (("claude", "gpt-4o-2024-08-06", "validation"), "error: both labels files are gpt-4o-2024-08-06's ratings"),
        (("claude", "claude-3-7-sonnet-20250219", "train"), "error: the labels files rate different splits"),
        (("missing", None, None), "error: "),
        (("far", "claude-3-7-sonnet-20250219", "validation"), "error: the ratings name 1 row(s) the validation split"),
    ],
)
def test_bad_input_is_one_error_line_and_nothing_written(
    second: tuple, message: str, csts_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = source(tmp_path / "in", "gpt", "gpt-4o-2024-08-06", GPT)
    name, model, split = second
    ratings = CLAUDE | {"9999": [3]} if name == "far" else CLAUDE  # a row past the split's end
    b = source(tmp_path / "in", name, model, ratings, split) if model else tmp_path / "in" / "missing.tsv"
    out = tmp_path / "out" / "merged.tsv"
    assert main(["reannotate-merge", str(a), str(b), "--out", str(out), "--data-dir", str(csts_dir)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1
    assert not (tmp_path / "out").exists()


PAPER_ALPHA = Setup(("claude-3-7-sonnet-20250219",), 5, "train", 9000, "sample", 100, 1.0, False, "gpt-4o")


def test_the_papers_alpha_and_kappa_are_judged_like_a_run() -> None:
    # Before, `reannotate` printed alpha 0.865 and kappa 0.247 beside any run, with "other data and models" only.
    assert judge_alpha(PAPER_ALPHA) == (
        "comparable (Claude-3.7-Sonnet, 5 repeats of a random 100 train rows, GPT-4o's conditions; temperature 1: "
        "the paper states none)"
    )
    first = PAPER_ALPHA.__class__(**{**PAPER_ALPHA.__dict__, "chosen": "first", "models": ("gpt-4o",), "repeats": 3})
    assert judge_alpha(first) == (
        "not comparable (model=gpt-4o (paper: Claude-3.7-Sonnet); repeats=3 (paper: 5); rows=100 (the first rows) "
        "(paper: a random 100); temperature 1: the paper states none)"
    )
    merged = Setup(("gpt-4o", "claude-3-7-sonnet-latest"), 1, "train", 9000, "all", 9000, 0.0, True, "gpt-4o")
    assert judge_kappa(merged).startswith("comparable (every train row, V(human + GPT-4o + Claude-3.7-Sonnet)")
    one = Setup(("claude-3-7-sonnet-20250219",), 1, "train", 9000, "all", 9000, 0.0, False, None)
    assert judge_kappa(one) == (
        "not comparable (labels=V(claude-3-7-sonnet-20250219) (paper: V(human + GPT-4o + Claude-3.7-Sonnet), "
        "reannotate-merge); conditions=original (paper: rewritten by GPT-4o, Train-Mod); temperature 0: the paper "
        "states none)"
    )
    assert judge_alpha(PAPER_ALPHA.__class__(**{**PAPER_ALPHA.__dict__, "models": ("gpt-4o-mini",)})).startswith(
        "not comparable (model=gpt-4o-mini (paper: Claude-3.7-Sonnet)"
    )
