"""`report` reads run folders through one door (issue 41): a FIFO at an errors output's scores.json, a samples.jsonl
over the size bound, a line whose numbers are not numbers, a config.json nested past the decoder: each run is
skipped with one warning line saying why (or the command ends in one error line), never a hang or a traceback.
Each command runs on a thread with a deadline: a hang fails the test."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.results import manifest
from tests.reporting.test_report_fifo import finishes
from tests.synthetic_runs import make_run


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    return make_run(tmp_path / "results", "a", n=40), make_run(tmp_path / "results", "b", n=40, offset=0.3)


def test_a_fifo_at_an_errors_output_s_scores_json_is_not_waited_on(
    runs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good, _ = runs
    (good / "errors-x").mkdir()
    os.mkfifo(good / "errors-x" / "scores.json")
    code = finishes(lambda: main(["report", str(good), "--out", str(tmp_path / "rep")]))
    assert code == 0 and (tmp_path / "rep" / "report.md").is_file()
    assert "Traceback" not in capsys.readouterr().err


def test_a_samples_file_over_the_bound_is_skipped_unread(
    runs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    good, big = runs[0], make_run(tmp_path / "results", "big", n=80)
    size = (big / "samples.jsonl").stat().st_size
    monkeypatch.setattr(manifest, "MAX_SAMPLES_BYTES", size - 1)
    assert (good / "samples.jsonl").stat().st_size < size - 1  # the other run is within the bound
    code = finishes(lambda: main(["report", str(good), str(big), "--out", str(tmp_path / "rep")]))
    err = capsys.readouterr().err
    assert code == 0 and f"warning: skipped: {big} is not a readable run folder" in err
    assert "MiB this reader takes" in err


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("prediction", "3.5", "prediction '3.5' is not a finite number"),
        ("prediction", True, "prediction 'True' is not a finite number"),
        ("label", None, None),  # a hidden label: fine
        ("parsed", 1e999, "parsed 'inf' is not a finite number"),  # json writes it as Infinity
        ("id", 7, "id or prompt is not a string"),
        ("shot_ids", "12", "shot_ids is not a list of ids"),
        ("output", ["a"], "output is not a string"),
    ],
)
def test_a_sample_line_whose_values_cannot_be_what_they_name_skips_the_run(
    runs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str, value: object, says: str
) -> None:
    good, bad = runs
    lines = (bad / "samples.jsonl").read_text().splitlines()
    lines[3] = json.dumps(json.loads(lines[3]) | {field: value})
    (bad / "samples.jsonl").write_text("\n".join(lines) + "\n")
    code = finishes(lambda: main(["report", str(good), str(bad), "--out", str(tmp_path / "rep")]))
    err = capsys.readouterr().err
    assert code == 0 and "Traceback" not in err
    if says is None:
        assert "skipped" not in err
    else:
        assert f"warning: skipped: {bad} is not a readable run folder: {says}" in err


@pytest.mark.parametrize("name", ["config.json", "metrics.json", "samples.jsonl"])
def test_json_nested_past_the_decoder_skips_the_run(
    runs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    good, bad = runs
    deep = "[" * 100_000 + "]" * 100_000
    if name == "samples.jsonl":
        (bad / name).write_text((bad / name).read_text() + deep + "\n")
    else:
        (bad / name).write_text(json.dumps({"settings": {}, "x": "{deep}"}).replace('"{deep}"', deep))
    code = finishes(lambda: main(["report", str(good), str(bad), "--out", str(tmp_path / "rep")]))
    err = capsys.readouterr().err
    assert "Traceback" not in err and "RecursionError" not in err
    assert code == 0 and f"warning: skipped: {bad} is not a readable run folder" in err
