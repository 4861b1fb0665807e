"""Settings mean what they say (issue 30): an option's prefix on top of a --config file's list is refused rather
than added to the list, and a labels file that labels no row is one error line, not a run with n=0."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli.config_run import parse_runs
from harness.cli.main import main


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "run.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_the_full_name_replaces_the_files_list(tmp_path: Path) -> None:
    name = write(tmp_path, 'model = "overlap"\nstop = ["A", "C"]\n')
    (args,), _ = parse_runs(name, ["--stop", "B"])
    assert args.stop == ["B"]


@pytest.mark.parametrize("prefix", ["--sto", "--st"])
def test_a_prefix_on_top_of_a_files_list_is_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture, prefix: str
) -> None:
    """argparse took `--sto` for --stop, and the file's ["A", "C"] became ["A", "C", "B"]: neither what the
    file says nor what was typed. Abbreviations are off: one error line, exit 2, no run folder."""
    name = write(tmp_path, f'model = "overlap"\nstop = ["A", "C"]\nresults-dir = "{tmp_path}/r"\n')
    assert main(["--config", name, prefix, "B", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: unrecognized argument {prefix}: did you mean --stop?")
    assert not (tmp_path / "r").exists()


def test_a_prefix_of_config_is_not_a_config_never_loaded(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """`--conf FILE` was parsed as --config, but only the exact `--config` loads a file: the file was ignored."""
    name = write(tmp_path, f'model = "overlap"\ndataset = "stsb"\nresults-dir = "{tmp_path}/r"\n')
    assert main(["--model", "overlap", "--conf", name, "--results-dir", str(tmp_path / "r2"), "--no-progress"]) == 2
    assert capsys.readouterr().err.startswith("error: unrecognized argument --conf: did you mean --config?")
    assert not (tmp_path / "r").exists() and not (tmp_path / "r2").exists()


@pytest.mark.parametrize(
    "body",
    ["", "0\t-1\n1\t-1\n"],  # only a header; every row marked -1 (invalid condition)
)
def test_a_labels_file_that_labels_no_row_is_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture, body: str
) -> None:
    labels = tmp_path / "labels.tsv"
    labels.write_text("uid\treannotated-label\n" + body, encoding="utf-8")
    results = tmp_path / "r"
    code = main(["--model", "overlap", "--dataset", "stsb", "--labels", str(labels), "--limit", "5",
                 "--results-dir", str(results), "--no-progress"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith(f"error: {labels}: labels no row") and "-1" in err
    assert not results.exists()
