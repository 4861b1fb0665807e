"""`run_eval.py report` (harness/cli/report_cmd.py): where each report goes, what is checked before the first is
written, and what the terminal shows. Runs of the offline `overlap` baseline on 5 STS-B items: real folders,
real reports, no model."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.cli.report_cmd import _default_out
from harness.config.settings import RunConfig

STAMP = r"\d{8}-\d{6}"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of a run folder and two sweep folders (`--model overlap,random`)."""
    results = tmp_path_factory.mktemp("results")
    base = ["--dataset", "stsb", "--limit", "5", "--results-dir", str(results), "--no-progress"]
    assert main(["--model", "overlap", *base, "--run-id", "a"]) == 0
    for _ in range(2):
        assert main(["--model", "overlap,random", *base]) == 0
    return results


def sweeps(results: Path) -> list[Path]:
    return sorted(p for p in results.iterdir() if (p / "sweep.json").is_file())


def test_the_terminal_shows_report_md_up_to_its_published_section_then_where_it_is(
    runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    out = tmp_path / "r"
    capsys.readouterr()
    assert main(["report", str(runs / "a"), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    md = (out / "report.md").read_text(encoding="utf-8")
    head, published, _ = md.partition("\n## Published numbers")
    assert published  # every report.md has the section: the terminal leaves it to the file
    assert printed == f"{head.rstrip()}\nreport: {out}\nhtml: {(out / 'index.html').resolve()}\n"


def test_without_out_a_folder_of_runs_gets_its_report_inside_and_shareable_is_named_so(
    runs: Path, capsys: pytest.CaptureFixture
) -> None:
    before = set(runs.iterdir())
    assert main(["report", str(runs), "--shareable"]) == 0
    made = set(runs.iterdir()) - before
    assert [re.fullmatch(f"report-shareable-{STAMP}", p.name) is not None for p in made] == [True]
    assert capsys.readouterr().out.splitlines()[-2] == f"report: {made.pop()}"


def test_without_out_each_sweep_gets_its_own_report_folder(runs: Path, capsys: pytest.CaptureFixture) -> None:
    both = sweeps(runs)
    assert len(both) == 2
    assert main(["report", *map(str, both)]) == 0
    reported = [line.removeprefix("report: ") for line in capsys.readouterr().out.splitlines() if "report: " in line]
    assert reported == [str(s / "report") for s in both]
    assert all((s / "report" / "report.md").is_file() for s in both)


def test_a_run_and_a_sweep_together_share_one_report(runs: Path, tmp_path: Path) -> None:
    out = tmp_path / "mixed"
    assert main(["report", str(runs / "a"), str(sweeps(runs)[0]), "--out", str(out)]) == 0
    assert (out / "report.md").is_file() and not (sweeps(runs)[0] / "report-shareable").exists()


def test_every_report_folder_is_checked_before_the_first_is_written(
    runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """Two sweeps, the second's report folder a file: one error line, the first sweep's folder not written."""
    first, second = sweeps(runs)
    (second / "report-shareable").write_text("not a folder")
    try:
        assert main(["report", str(first), str(second), "--shareable"]) == 2
    finally:
        (second / "report-shareable").unlink()
    assert f"report folder {second / 'report-shareable'} exists and is not a directory" in capsys.readouterr().err
    assert not (first / "report-shareable").exists()


def test_a_published_file_that_is_a_folder_is_one_line_and_nothing_is_written(
    runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    out = tmp_path / "r"
    assert main(["report", str(runs / "a"), "--published", str(tmp_path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --published") and len(err.splitlines()) == 1
    assert not out.exists()


@pytest.mark.parametrize(
    ("paths", "where"),
    [
        (["results"], "results"),  # a folder of runs: the report beside them
        (["results/a"], "default"),  # one run folder: results/ (RunConfig.results_dir)
        (["results", "results/a"], "default"),  # several folders
        (["missing"], "default"),  # not a folder: reported as not found by write_report, not placed in it
    ],
)
def test_the_default_report_folder(tmp_path: Path, paths: list[str], where: str) -> None:
    (tmp_path / "results" / "a").mkdir(parents=True)
    (tmp_path / "results" / "a" / "config.json").write_text("{}")
    out = _default_out([tmp_path / p for p in paths], "report")
    parent = tmp_path / "results" if where == "results" else RunConfig.results_dir
    assert out.parent == parent and re.fullmatch(f"report-{STAMP}", out.name)
