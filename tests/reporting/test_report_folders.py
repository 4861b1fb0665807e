"""What a report is built from and what it says about it: titles, dry runs, folders of runs, reasons, notes."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from harness.cli.main import main
from harness.config.settings import RunConfig
from harness.reporting.report import write_report
from harness.results.manifest import write_manifest
from harness.results.read import load_run
from harness.runner import run
from harness.scoring.metrics import compute_metrics
from tests.synthetic_runs import make_run


@pytest.mark.parametrize(
    ("datasets", "title"),
    [(["stsb"], "# STS-B prompting report"), (["csts"], "# C-STS prompting report"),
     (["csts", "stsb"], "# C-STS and STS-B prompting report")],
)  # fmt: skip
def test_the_title_names_the_datasets(datasets: list[str], title: str, tmp_path: Path) -> None:
    dirs = [make_run(tmp_path / "results", d, dataset=d) for d in datasets]
    out = write_report(dirs, tmp_path / "report")
    assert (out / "report.md").read_text().splitlines()[0] == title
    assert f"<title>{title[2:]}</title>" in (out / "index.html").read_text()


def test_a_dry_run_folder_is_reported_as_such_not_as_a_mismatch(tmp_path: Path) -> None:
    config = RunConfig(
        model="gpt-4o", dataset="stsb", limit=5, dry_run=True, results_dir=tmp_path / "r", progress=False
    )
    dry = run(config).run_dir
    real = make_run(tmp_path / "r", "real", dataset="stsb")
    out = write_report([dry, real], tmp_path / "report")
    report = (out / "report.md").read_text()
    assert f"R1 `{dry.name}` (gpt-4o, none, k=0): dry run, no answers" in report
    assert "metrics.json differs" not in report
    table = pd.read_csv(out / "table_stsb-validation.csv")
    assert list(table["model"]) == ["gpt-4"]  # the dry run holds no cell
    assert "dry run, no answers" in (out / "index.html").read_text()


def test_report_on_a_folder_of_run_folders_prints_where_index_html_is(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    results = tmp_path / "results"
    assert main(["--model", "overlap,random", "--dataset", "stsb", "--limit", "20", "--results-dir", str(results)]) == 0
    make_run(results, "synthetic", dataset="stsb")
    (results / ".staging-of-a-killed-run").mkdir()  # hidden staging folders and half-written ones are no runs
    (results / "unfinished").mkdir()
    (results / "unfinished" / "config.json").write_text("{}")
    capsys.readouterr()
    assert main(["report", str(results)]) == 0
    lines = capsys.readouterr().out.splitlines()
    html = Path(lines[-1].removeprefix("html: "))
    assert lines[-1].startswith("html: ") and html.is_absolute() and html.name == "index.html" and html.is_file()
    assert html.parent.parent == results.resolve()  # the report goes beside the runs
    runs = pd.read_csv(html.parent / "runs.csv")
    assert sorted(runs["model"]) == ["gpt-4", "overlap", "random"]  # the sweep's runs once each, and the other


def test_reason_codes_are_derived_for_old_samples_and_read_from_new_ones(tmp_path: Path) -> None:
    results = tmp_path / "results"
    old = make_run(results, "old", n=30, invalid_every=3, errors=2, outputs={1: "9.0"})
    new = make_run(results, "new", n=30, invalid_every=5, new_fields=True, outputs={2: "Sentence 1: 4"})
    lines = (new / "samples.jsonl").read_text().splitlines()
    lines[2] = lines[2].replace('"reason": "number"', '"reason": "echo"')  # as a newer runner marks an echo
    (new / "samples.jsonl").write_text("\n".join(lines) + "\n")
    write_manifest(new)  # as that runner wrote it
    out = write_report([old, new], tmp_path / "report")
    runs = pd.read_csv(out / "runs.csv").set_index("run")
    # old: items 0, 3, ..., 27 have no number (10), 28 and 29 failed, item 1 says 9 (out of 1-5), the rest parse.
    assert runs.loc["old", ["reason_no_number", "reason_error", "reason_out_of_range", "reason_number"]].tolist() == [
        10, 2, 1, 17
    ]  # fmt: skip
    assert runs.loc["new", ["reason_no_number", "reason_echo", "reason_number"]].tolist() == [6, 1, 23]
    assert runs.loc["new", "served_model"] == "gpt-4-served"
    assert "| R2 | gpt-4 · R2 | long | 4 | 23 | 6 | 1 |" in (out / "report.md").read_text()


def test_a_correlation_on_few_items_or_none_carries_its_reason(tmp_path: Path) -> None:
    results = tmp_path / "results"
    few = make_run(results, "few", n=9)
    constant = make_run(results, "constant", model="m", n=40, outputs={i: "3" for i in range(40)})
    out = write_report([few, constant], tmp_path / "report")
    report = (out / "report.md").read_text()
    assert "Spearman n=9" in report
    assert "Spearman constant predictions: all 40 parsed as 3.0" in report
    runs = pd.read_csv(out / "runs.csv").set_index("run")
    assert runs.loc["few", "pearson_note"] == "n=9" and pd.isna(runs.loc["constant", "spearman"])


def test_a_note_from_metrics_json_is_shown(tmp_path: Path) -> None:
    import json

    run_dir = make_run(tmp_path / "results", "noted", n=12)
    metrics = json.loads((run_dir / "metrics.json").read_text())
    (run_dir / "metrics.json").write_text(json.dumps(metrics | {"spearman_note": "n=12 (from the runner)"}))
    write_manifest(run_dir)  # as the runner wrote it
    out = write_report([run_dir], tmp_path / "report")
    assert "Spearman n=12 (from the runner)" in (out / "report.md").read_text()


def test_a_test_split_run_says_its_labels_are_hidden(tmp_path: Path) -> None:
    import json

    run_dir = make_run(tmp_path / "results", "test", split="test", n=10)
    lines = [json.loads(line) | {"label": None} for line in (run_dir / "samples.jsonl").read_text().splitlines()]
    (run_dir / "samples.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    metrics = compute_metrics(load_run(run_dir).samples, (1.0, 5.0))  # as the runner writes it: no correlation
    (run_dir / "metrics.json").write_text(json.dumps(metrics))
    write_manifest(run_dir)
    out = write_report([run_dir], tmp_path / "report")
    report = (out / "report.md").read_text()
    assert "R1 (gpt-4, long, k=4): Spearman labels hidden" in report and "differs" not in report
    # Table 4, C-STS test: every setting that differs is named (reporting/paper_settings.py)
    assert (
        "published Spearman 43.10 is not comparable (n=10 of 4,732; shot_sampler=seeded (paper: reference, seed 42); "
        "model=gpt-4 (paper: gpt-4-0314))" in report
    )


def test_two_report_commands_writing_one_out_at_once_both_finish(tmp_path: Path) -> None:
    """Issue 41: two real `run_eval.py report` processes, started together, one --out. Both exit 0 and print their
    summary; the folder left is one whole report (tests/results/test_stage.py races the replacement itself 150 times
    a process: two commands' one replacement each may or may not meet)."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    run_dir = make_run(tmp_path / "results", "a", dataset="csts")
    out = tmp_path / "shared-report"
    argv = [sys.executable, str(root / "run_eval.py"), "report", str(run_dir), "--out", str(out)]
    env = os.environ | {"PYTHONPATH": str(root), "MPLBACKEND": "Agg"}
    reports = [subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)]
    reports.append(subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    printed = [p.communicate(timeout=300) for p in reports]
    assert [p.returncode for p in reports] == [0, 0], [err for _, err in printed]
    assert all(f"report: {out}\n" in stdout and stdout.startswith("# C-STS prompting report") for stdout, _ in printed)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results", "shared-report"]  # nothing aside, no lock
    assert {"report.md", "index.html"} <= {p.name for p in out.iterdir()}
    assert (out / "report.md").read_text().startswith("# C-STS prompting report")
