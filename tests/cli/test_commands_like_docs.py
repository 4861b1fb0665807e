"""Commands do what docs/reports.md says (issue 34): `report results/sweep-*` rewrites each sweep's report/ (and
report-shareable/ with --shareable), and `compare` with three or more run folders compares every pair."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.reporting.compare import compare_runs


def sweep(results: Path, seed: int) -> Path:
    argv = ["--model", "overlap,random", "--shots", "0", "--dataset", "stsb", "--limit", "30", "--no-progress"]
    before = set(results.glob("sweep-*"))
    assert main([*argv, "--seed", str(seed), "--results-dir", str(results)]) == 0
    (made,) = set(results.glob("sweep-*")) - before
    return made


@pytest.mark.parametrize("shareable", [False, True])
def test_report_of_several_sweeps_rewrites_each_sweeps_own_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], shareable: bool
) -> None:
    results = tmp_path / "results"
    first, second = sweep(results, 0), sweep(results, 1)
    kind = "report-shareable" if shareable else "report"
    for s in (first, second):
        (s / "report" / "report.md").unlink()  # so that a rewrite shows
    capsys.readouterr()
    assert main(["report", str(first), str(second), *(["--shareable"] if shareable else [])]) == 0
    out = capsys.readouterr().out
    assert re.findall(r"^report: (.*)$", out, re.M) == [str(first / kind), str(second / kind)]
    for s in (first, second):
        assert (s / kind / "report.md").is_file() and (s / kind / "index.html").is_file()
    assert not list(results.glob("report-*"))  # no combined report beside them


def test_compare_with_three_run_folders_compares_every_pair(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = []
    for model, seed in (("overlap", 0), ("random", 0), ("random", 1)):
        argv = ["--model", model, "--dataset", "stsb", "--limit", "30", "--seed", str(seed), "--no-progress"]
        assert main([*argv, "--results-dir", str(tmp_path), "--run-id", f"{model}{seed}"]) == 0
        runs.append(tmp_path / f"{model}{seed}")
    capsys.readouterr()
    assert main(["compare", *map(str, runs), "--resamples", "200"]) == 0
    out = capsys.readouterr().out
    pairs = [(runs[0], runs[1]), (runs[0], runs[2]), (runs[1], runs[2])]
    assert out.startswith("3 run folders: 3 pairs, each compared on the items both answered.")
    for i, (a, b) in enumerate(pairs, start=1):  # each pair exactly as `compare A B` prints it
        assert f"\n## pair {i} of 3: {a} − {b}\n\n{compare_runs(a, b, 200, 0)}" in out
    capsys.readouterr()
    assert main(["compare", str(runs[0]), str(runs[1]), "--resamples", "200"]) == 0
    assert capsys.readouterr().out == compare_runs(runs[0], runs[1], 200, 0)
