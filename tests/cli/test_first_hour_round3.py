"""The first hour, round 3 (issue 45): the headline command is the paper's protocol and its dry run says so, and
every mistake a new user made is one `error:` line naming what was wrong."""

from __future__ import annotations

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
