"""A user's dataset file through every command that takes a dataset (issue 43): a run, a sweep beside STS-B, a
report with the invalid rate and the chance band, `compare`, `data-report` and `overlap`; its file's hash in the
run's identity. The dataset (tests/datasets/toy_sts) exists only in the tests."""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path

import pytest
from scipy import stats

from harness.calling.backends.offline import overlap_score
from harness.cli.main import main
from harness.config.settings import RunConfig
from harness.runner import plan

TOY = Path(__file__).parent / "toy_sts" / "toy.toml"


def _samples(run: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]


def test_a_run_sweep_report_and_compare_on_a_dataset_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = tmp_path / "r"
    base = ["--results-dir", str(results), "--no-progress"]
    assert main(["--dataset", str(TOY), "--model", "overlap", "--shots", "2", "--instr", "short", *base]) == 0
    (run,) = results.iterdir()
    assert run.name.startswith("toy-sts-validation-overlap-k2-short-")
    config = json.loads((run / "config.json").read_text())
    toml_hash = hashlib.sha256(TOY.read_bytes()).hexdigest()
    assert (config["dataset"], config["settings"]["dataset"]) == ("toy-sts", str(TOY))
    assert config["dataset_file"]["sha256"] == config["data_hashes"]["toy.toml"] == toml_hash
    assert config["label_range"] == [0.0, 4.0] and config["template"] == "stsb/short.j2"
    # Each prediction is word overlap on the file's own scale (0-4), and Spearman is scipy's on them.
    with open(TOY.parent / "dev.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    samples = _samples(run)
    assert [s["prediction"] for s in samples] == [
        float(overlap_score(r["text_a"], r["text_b"], (0.0, 4.0))) for r in rows
    ]
    metrics = json.loads((run / "metrics.json").read_text())
    rho = stats.spearmanr([s["prediction"] for s in samples], [float(r["score"]) for r in rows]).statistic
    assert metrics["spearman"] == pytest.approx(100 * rho)

    # A sweep beside STS-B, and its report: the invalid rate and the chance band of each run.
    sweep = ["--dataset", f"{TOY},stsb", "--model", "overlap,random", "--limit", "30", *base]
    assert main(sweep) == 0
    capsys.readouterr()
    runs = {p.name.rsplit("-", 2)[0]: p for p in results.iterdir() if not p.name.startswith("sweep-")}
    assert set(runs) == {
        "toy-sts-validation-overlap-k2-short",
        "toy-sts-validation-overlap-k0-none",
        "toy-sts-validation-random-k0-none",
        "stsb-validation-overlap-k0-none",
        "stsb-validation-random-k0-none",
    }
    (sweep_dir,) = results.glob("sweep-*")
    assert main(["report", str(sweep_dir), "--out", str(tmp_path / "rep")]) == 0
    report = (tmp_path / "rep" / "report.md").read_text()
    assert report.startswith("# toy-sts and STS-B prompting report")
    toy_part = report[report.index("## toy-sts validation") : report.index("## STS-B validation")]
    assert "| none | overlap | 30 | 0 | 0.00 |" in toy_part and "|  | random | 30 | 0 | 100.00 |" in toy_part
    assert "a correlation within ±36.1 of zero arises by chance alone at this n" in toy_part  # n=30: 1.96/sqrt(29)

    # compare: two runs of the dataset file (items, not sentence pairs: it has no conditions); not against STS-B.
    overlap, random = runs["toy-sts-validation-overlap-k0-none"], runs["toy-sts-validation-random-k0-none"]
    assert main(["compare", str(overlap), str(random)]) == 0
    assert "2000 resamples of items" in capsys.readouterr().out
    assert main(["compare", str(overlap), str(runs["stsb-validation-overlap-k0-none"])]) == 2
    assert capsys.readouterr().err == "error: runs differ in dataset (toy-sts vs stsb): not the same items\n"


def test_data_report_and_overlap_take_a_dataset_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data-report", "--dataset", str(TOY)]) == 0
    out = capsys.readouterr().out
    assert "| train | 40 |" in out and "| validation | 30 |" in out
    assert main(["overlap", "--dataset", str(TOY)]) == 0
    assert capsys.readouterr().out.startswith("toy-sts: pool train (40 rows) vs evaluated validation (30 rows)")


def test_the_files_content_is_in_the_run_identity(tmp_path: Path) -> None:
    """A sweep reuses a run by its config_hash: an edited dataset file (here only its label column renamed, the
    same data) must make a new one, however the path is the same."""
    folder = tmp_path / "data"
    folder.mkdir()
    for name in ("train.csv", "dev.csv"):
        (folder / name).write_bytes((TOY.parent / name).read_bytes())
    (folder / "toy.toml").write_text(TOY.read_text())
    config = RunConfig(model="overlap", dataset=str(folder / "toy.toml"), limit=5)
    first = plan(config).record["config_hash"]
    assert plan(config).record["config_hash"] == first
    (folder / "toy.toml").write_text("private = true\n" + TOY.read_text())
    assert plan(config).record["config_hash"] != first
