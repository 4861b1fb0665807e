"""A variant is one module and one entry in VARIANTS (docs/extending.md "A new variant"): a toy variant,
tests/variants/toy_variant.py, gets its table entry here and nowhere else, and is then offered by the parser,
validated, run end to end through run_eval.py on synthetic C-STS with the offline overlap baseline, and recorded."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from harness.cli.main import main
from harness.datasets.choose import load_dataset
from harness.variants import VARIANTS, Description

# The one line a new variant adds to harness/variants/__init__.py VARIANTS.
TOY = Description("tests.variants.toy_variant")
# What docs/extending.md "A new variant" must name (tests/docs/test_extending.py checks it does).
DOCUMENTED = ("harness/variants/<name>.py", "harness/variants/__init__.py")


def _jaccard(a: str, b: str) -> float:
    """Word overlap as the overlap baseline defines it (lower-cased runs of letters and digits), written anew."""
    x, y = set(re.findall(r"[a-z0-9]+", a.lower())), set(re.findall(r"[a-z0-9]+", b.lower()))
    return len(x & y) / len(x | y) if x | y else 0.0


def _argv(csts_dir: Path, results: Path, variant: str) -> list[str]:
    return [
        "--model", "overlap", "--dataset", "csts", "--data-dir", str(csts_dir), "--shots", "0", "--instr", "short",
        "--limit", "12", "--variant", variant, "--results-dir", str(results), "--run-id", variant, "--no-progress",
    ]  # fmt: skip


def _samples(run: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (run / "samples.jsonl").read_text(encoding="utf-8").splitlines()]


def test_a_new_variant_runs_end_to_end(monkeypatch: pytest.MonkeyPatch, csts_dir: Path, tmp_path: Path) -> None:
    monkeypatch.setitem(VARIANTS, "toy", TOY)
    results = tmp_path / "results"
    assert main(_argv(csts_dir, results, "toy")) == 0
    assert main(_argv(csts_dir, results, "sentences")) == 0
    rows = load_dataset("csts", "validation", data_dir=csts_dir).examples[:12]
    toy, paper = _samples(results / "toy"), _samples(results / "sentences")
    # The toy prompt holds the condition after each sentence; the overlap baseline scored exactly that pair.
    for e, s in zip(rows, toy, strict=True):
        assert f"Sentence 1:  {f'{e.sentence1} {e.condition}'.strip()} Sentence 2:" in s["prompt"]
        pair = (f"{e.sentence1} {e.condition}", f"{e.sentence2} {e.condition}")
        assert s["prediction"] == pytest.approx(round(1 + 4 * _jaccard(*pair), 2))
    assert [s["prediction"] for s in toy] != [s["prediction"] for s in paper]  # not the sentence prompt's scores
    config = json.loads((results / "toy" / "config.json").read_text(encoding="utf-8"))
    assert config["variant"] == "toy" and config["toy_rule"] == "condition after each sentence"
    assert config["config_hash"] != json.loads((results / "sentences" / "config.json").read_text())["config_hash"]


def test_without_its_entry_the_parser_refuses_it(
    csts_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_argv(csts_dir, tmp_path / "results", "toy")) == 2
    assert "invalid choice: 'toy'" in capsys.readouterr().err
    assert not (tmp_path / "results").exists()


def test_the_entry_decides_what_it_needs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """An entry that asks questions first needs C-STS and an answer model; one that embeds needs an embedder."""
    from harness.config.settings import RunConfig
    from harness.types import HarnessError
    from harness.variants.validate import validate_run

    monkeypatch.setitem(VARIANTS, "toy", TOY)
    validate_run(RunConfig(model="overlap", dataset="stsb", variant="toy"))
    with pytest.raises(HarnessError, match="^--answers and --answer-model belong to --variant qa or qa-embed$"):
        validate_run(RunConfig(model="overlap", dataset="stsb", variant="toy", answer_model="gpt-4o"))
    monkeypatch.setitem(VARIANTS, "toy", Description(TOY.module, answers=True))
    with pytest.raises(HarnessError, match="^--variant toy turns C-STS conditions into questions"):
        validate_run(RunConfig(model="overlap", dataset="stsb", variant="toy"))
    monkeypatch.setitem(VARIANTS, "toy", Description(TOY.module, embeds=True))
    with pytest.raises(HarnessError, match="^--variant toy needs an embedding model"):
        validate_run(RunConfig(model="overlap", dataset="stsb", variant="toy"))
