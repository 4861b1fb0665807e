"""The CASE projection learns the labels the run scores and chooses its epoch on items the run does not score
(harness/variants/case_split.py; Zhang et al. 2025 §4: the 70/30 split of validation), checked by id sets on
synthetic C-STS the size of the real validation split (the re-annotated labels match it by row order), and end to
end through /v1/embeddings (tests/fake_server.py): metrics.json and the printed summary say which items were used."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.config.sections import EmbedOptions
from harness.config.settings import RunConfig
from harness.datasets.choose import load_dataset
from harness.datasets.labels import load_reannotated
from harness.runner import prepare
from harness.types import HarnessError
from harness.variants.case_split import ffn_items
from tests.conftest import write_synthetic_csts
from tests.fake_server import FakeServer


@pytest.fixture(scope="module")
def full_size(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Synthetic C-STS with 2,834 validation rows, as many as the re-annotated labels cover."""
    return write_synthetic_csts(tmp_path_factory.mktemp("csts"), n_train=30, n_val=1417, n_test=5)


def _config(data: Path, **changes: object) -> RunConfig:
    base = RunConfig(
        model="m", backend="openai", variant="case", dataset="csts", data_dir=data, embed=EmbedOptions(ffn="linear")
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def _ids(examples: object) -> set[str]:
    return {e.id for e in examples}  # type: ignore[attr-defined]


@pytest.mark.parametrize("labels", ["original", "reannotated"])
def test_the_epoch_is_chosen_on_the_other_part_of_the_70_30_split(full_size: Path, labels: str) -> None:
    config = _config(full_size, labels=labels, subset="reannotated-test")
    scored = prepare(config).queries
    items = ffn_items(config, scored)
    chosen, trained = _ids(items.select), _ids(items.train)
    assert chosen and chosen.isdisjoint(_ids(scored))  # ids are rows of validation, as the scored items'
    other = _ids(prepare(dataclasses.replace(config, subset="reannotated-train")).queries)
    if labels == "original":  # the paper's protocol: train split, epoch on the 70% part, scored on the 30%
        assert chosen == other and len(other) == 1834 and len(scored) == 786
        assert items.train == load_dataset("csts", "train", data_dir=full_size).examples
    else:  # the train split has no re-annotated labels: the 70% part is divided, both parts re-annotated
        assert chosen | trained == other and chosen.isdisjoint(trained) and len(chosen) == round(0.3 * 1834)
        assert trained.isdisjoint(_ids(scored))
        reannotated = load_reannotated()
        assert all(e.label == reannotated[e.id] for e in (*items.train, *items.select))
        original = {e.id: e.label for e in load_dataset("csts", "validation", data_dir=full_size).examples}
        assert any(e.label != original[e.id] for e in items.train)  # the run's labels, not the original ones
    assert items.labels == labels


def test_a_run_over_all_of_validation_chooses_its_epoch_on_the_items_it_leaves_out(full_size: Path) -> None:
    config = _config(full_size, limit=300)
    scored = prepare(config).queries
    items = ffn_items(config, scored)
    every = _ids(load_dataset("csts", "validation", data_dir=full_size).examples)
    assert _ids(items.select) == every - _ids(scored) and items.note is None
    whole = ffn_items(dataclasses.replace(config, limit=None), prepare(dataclasses.replace(config, limit=None)).queries)
    assert whole.note is not None and "optimistic" in whole.note  # nothing left: said, as before
    with pytest.raises(HarnessError, match="only 0 are left"):  # re-annotated labels need items left to learn from
        ffn_items(dataclasses.replace(config, limit=None, labels="reannotated"), load_reannotated_scored(full_size))


def load_reannotated_scored(data: Path) -> tuple[object, ...]:
    return prepare(_config(data, labels="reannotated")).queries


def test_the_run_records_and_prints_the_items_it_trained_and_chose_on(
    csts_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--variant", "case", "--backend", "openai", "--model", "text-embedding-3-small", "--data-dir",
            str(csts_dir), "--results-dir", str(tmp_path), "--run-id", "f", "--base-url", "", "--no-progress",
            "--limit", "10", "--case-ffn", "linear", "--case-ffn-epochs", "3"]  # fmt: skip
    with FakeServer() as server:
        argv[argv.index("--base-url") + 1] = server.openai_url
        assert main(argv) == 0
    out = capsys.readouterr().out
    ffn = json.loads((tmp_path / "f" / "metrics.json").read_text())["case"]["ffn"]
    scored = {json.loads(x)["id"] for x in (tmp_path / "f" / "samples.jsonl").read_text().splitlines()}
    rest = sorted(_ids(load_dataset("csts", "validation", data_dir=csts_dir).examples) - scored)
    assert ffn["n_validation"] == len(rest) == 24 - 10  # the synthetic split's 24 rows less the 10 scored
    assert ffn["epoch_items_sha256"] == hashlib.sha256("".join(f"{i}\n" for i in rest).encode()).hexdigest()
    assert ffn["epoch_chosen_on"] == "the validation items this run does not score" and "note" not in ffn
    assert f"epoch {ffn['best_epoch']} of 3 chosen on the validation items this run does not score (n=14)" in out
    assert "ffn: linear, trained on the train split (original labels) (n=80, labels original)" in out


def test_re_annotated_labels_with_no_item_left_to_learn_from_are_one_line_before_anything_is_written(
    full_size: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--variant", "case", "--backend", "openai", "--model", "text-embedding-3-small", "--data-dir",
            str(full_size), "--results-dir", str(tmp_path / "r"), "--run-id", "f", "--base-url",
            "http://127.0.0.1:9/v1", "--no-progress", "--labels", "reannotated", "--case-ffn", "linear"]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --case-ffn with --labels reannotated") and "only 0" in err[0]
    assert not (tmp_path / "r").exists()
