"""cli/configs.py: argparse builds the run's RunConfig and a sweep's grid; every default comes from RunConfig."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from harness.cli.configs import config_from_args, grid_from_args
from harness.cli.main import main
from harness.cli.options import run_parser
from harness.config.settings import RunConfig
from harness.types import HarnessError


def parsed(*argv: str) -> tuple[RunConfig, dict]:
    a = run_parser().parse_args(list(argv))
    return config_from_args(a), grid_from_args(a)


def test_the_parsers_defaults_are_runconfigs_own() -> None:
    config, grid = parsed("--model", "m")
    assert grid == {}
    assert config == dataclasses.replace(RunConfig(model="m"), api=config.api, local=config.local)
    default = RunConfig(model="m")
    # BatchOptions has its own start time; every other option group field is RunConfig's default
    assert dataclasses.replace(config.api, batch=None) == default.api and config.local == default.local


def test_comma_lists_become_the_grid_and_the_base_takes_their_first_values() -> None:
    config, grid = parsed("--model", "a,b", "--shots=0,2,4", "--instr", "long", "--dataset", "stsb,csts,stsb")
    assert grid == {"model": ["a", "b"], "shots": [0, 2, 4], "dataset": ["stsb", "csts"]}  # repeats dropped
    assert (config.model, config.shots, config.instr, config.dataset) == ("a", 0, "long", "stsb")
    config, grid = parsed("--model", " x , y ")
    assert grid == {"model": ["x", "y"]}


def test_a_single_value_is_no_grid_and_other_options_take_no_lists() -> None:
    config, grid = parsed("--model", "overlap", "--shots", "2", "--dataset", "stsb")
    assert grid == {} and (config.model, config.shots, config.dataset) == ("overlap", 2, "stsb")
    with pytest.raises(HarnessError, match="argument --seed: invalid int value: '1,2'"):
        parsed("--model", "m", "--seed", "1,2")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--model", "a,,b"], "--model 'a,,b': empty item in the comma list"),
        (["--shots", "0,x"], "--shots: 'x' is not an integer"),
        (["--shots", "x"], "argument --shots: invalid int value: 'x'"),
        (["--dataset", "csts,sick"], "unknown dataset 'sick'; choose from csts, stsb, or a dataset file (.toml"),
        (["--dataset", "sick"], "unknown dataset 'sick'; choose from csts, stsb, or a dataset file (.toml"),
    ],
)
def test_a_bad_grid_value_is_one_line_and_writes_nothing(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--model", "overlap", *argv, "--results-dir", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {message}") and err.count("\n") == 1
    assert not (tmp_path / "r").exists()
