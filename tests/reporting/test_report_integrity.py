"""Reports over run folders that are not as written: altered ones flagged where their numbers are shown, unreadable
ones skipped with one warning, copies of one run shown once, older (unverified) ones flagged, not refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from harness.cli.main import main
from tests.synthetic_runs import make_run, overlap_run

DELETED = "run folder altered after it was written: samples.jsonl changed since it was written (199 lines, 200 written)"


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return overlap_run(tmp_path_factory.mktemp("results"))


def report(paths: list[Path], out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, str, pd.DataFrame]:
    capsys.readouterr()
    assert main(["report", *map(str, paths), "--out", str(out)]) == 0
    printed = capsys.readouterr()
    return printed.out, printed.err, pd.read_csv(out / "runs.csv")


def test_a_deleted_line_is_flagged_wherever_the_run_is_shown(
    written: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results"
    intact, altered = shutil.copytree(written, results / "intact"), results / "altered"
    shutil.copytree(written, altered)
    lines = (altered / "samples.jsonl").read_text().splitlines(keepends=True)
    (altered / "samples.jsonl").write_text("".join(lines[:7] + lines[8:]))
    out, err, runs = report([intact, altered], tmp_path / "rep", capsys)
    runs = runs.set_index("run")
    assert runs.loc["altered", "n"] == 199 and runs.loc["intact", "n"] == 200  # recomputed, and shown with a flag
    assert (runs.loc["altered", "integrity"], runs.loc["intact", "integrity"]) == ("altered", "verified")
    assert runs.loc["altered", "integrity_note"] == DELETED and pd.isna(runs.loc["intact", "integrity_note"])
    assert runs.loc["altered", "row"].endswith(" · ⚠ altered") and "altered" not in runs.loc["intact", "row"]
    assert f"warning: {altered}: {DELETED}" in err
    md = (tmp_path / "rep" / "report.md").read_text()
    for text in (out, md):  # the printed table and report.md: the flagged row and its note
        assert "· ⚠ altered | 199 |" in text and f"R2 (overlap · R2 · ⚠ altered, none, k=0): {DELETED}" in text
    assert "⚠ altered" in (tmp_path / "rep" / "table_stsb-validation.csv").read_text()
    html = (tmp_path / "rep" / "index.html").read_text()
    assert "⚠ altered" in html and "199 lines, 200 written" in html
    capsys.readouterr()
    assert main(["compare", str(intact), str(altered)]) == 2  # 199 items against 200: refused in one line
    assert main(["compare", str(intact), str(shutil.copytree(intact, tmp_path / "intact-copy"))]) == 0


def test_an_edited_prediction_is_flagged_in_compare(
    written: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = shutil.copytree(written, tmp_path / "a"), shutil.copytree(written, tmp_path / "b")
    lines = (b / "samples.jsonl").read_text().splitlines(keepends=True)
    record = json.loads(lines[3])
    lines[3] = json.dumps(record | {"prediction": 4.5}, ensure_ascii=False) + "\n"
    (b / "samples.jsonl").write_text("".join(lines))
    capsys.readouterr()
    assert main(["compare", str(a), str(b), "--resamples", "50"]) == 0
    out = capsys.readouterr().out
    assert "warning: B: run folder altered after it was written: samples.jsonl changed since it was written" in out
    assert "warning: A" not in out


def test_an_unreadable_folder_is_skipped_with_one_warning_and_the_others_reported(
    written: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results"
    shutil.copytree(written, results / "good")
    broken = Path(shutil.copytree(written, results / "broken"))
    (broken / "config.json").write_text("{not json")
    _, err, runs = report([results], tmp_path / "rep", capsys)
    assert list(runs["run"]) == ["good"]
    (line,) = err.splitlines()
    assert line.startswith(f"warning: skipped: {broken} is not a readable run folder")


def test_copies_of_one_run_are_shown_once_with_a_note(
    written: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results"
    for i in range(12):
        shutil.copytree(written, results / f"copy{i:02d}")
    _, err, runs = report([results], tmp_path / "rep", capsys)
    assert list(runs["run"]) == ["copy00"]
    md = (tmp_path / "rep" / "report.md").read_text()
    assert f"11 more folder(s) hold the same run as `{results / 'copy00'}`" in md and "and 8 more" in md
    assert "11 more folder(s) hold the same run" in err


def test_a_folder_of_an_older_version_is_reported_as_unverified(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    old = make_run(tmp_path / "results", "old", dataset="stsb", manifest=False)
    new = make_run(tmp_path / "results", "new", dataset="stsb", shots=2)
    out, err, runs = report([old, new], tmp_path / "rep", capsys)
    runs = runs.set_index("run")
    assert list(runs["integrity"]) == ["unverified", "verified"]
    assert runs.loc["old", "row"] == "gpt-4 · unverified" and runs.loc["new", "row"] == "gpt-4"
    assert "written without a manifest (an older version): not verified" in out
    assert err == ""
