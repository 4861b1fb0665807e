"""The command line's help: every command listed, every option explained with its default."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from harness.cli import main as cli
from harness.cli.batches import batches_parser
from harness.cli.compare_cmd import compare_parser
from harness.cli.errors import errors_parser
from harness.cli.options import COMMAND_HELP, run_parser
from harness.cli.parser import HelpFormatter
from harness.cli.reannotate import reannotate_parser
from harness.cli.reannotate_merge import merge_parser
from harness.cli.report_cmd import report_parser
from tests.conftest import ROOT

PARSERS = {
    "run": run_parser,
    "extract": cli.extract_parser,
    "data-report": cli.data_report_parser,
    "overlap": cli.overlap_parser,
    "report": report_parser,
    "compare": compare_parser,
    "batches": batches_parser,
    "errors": errors_parser,
    "reannotate": reannotate_parser,
    "reannotate-merge": merge_parser,
}


def test_every_command_has_a_parser_and_a_help_line() -> None:
    assert set(cli.COMMANDS) == set(COMMAND_HELP) == set(PARSERS) - {"run"}


def test_top_level_help_lists_every_command_the_plain_run_and_the_papers_protocol() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "run_eval.py"), "--help"], capture_output=True, text=True, timeout=60, check=True
    )
    text = proc.stdout
    for command in cli.COMMANDS:
        assert f"\n  {command} " in text
    assert "zero-shot (k=0: --shots 0) with no instruction (--instr none)" in text
    assert "the paper's protocol (Deshpande et al. 2023) is --shots 4 --instr long" in text
    for code in ("0 ", "2 ", "3 ", "4 ", "130", "143"):
        assert f"\n  {code}" in text


@pytest.mark.parametrize("name", PARSERS)
def test_every_option_has_help_and_shows_its_default(name: str) -> None:
    parser = PARSERS[name]()
    formatter = HelpFormatter(parser.prog)
    missing_help, missing_default = [], []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        label = "/".join(action.option_strings) or action.dest
        if not action.help:
            missing_help.append(label)
        takes_value = action.nargs != 0 and not isinstance(action, argparse.BooleanOptionalAction)
        shown = formatter._get_help_string(action)
        if action.option_strings and takes_value and "default" not in shown and "required" not in shown:
            missing_default.append(label)
    assert missing_help == [] and missing_default == []


def test_a_mistyped_command_is_named_as_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["overlapp", "--dataset", "stsb"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown command 'overlapp': did you mean 'overlap'?") and "is required" not in err
    assert cli.main(["frobnicate"]) == 2
    assert "unknown command 'frobnicate'" in capsys.readouterr().err


def test_usage_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--model", "overlap", "--dataset", "imdb"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown dataset 'imdb'; choose from csts, stsb, or a dataset file" in err


@pytest.mark.parametrize(
    ("flag", "chat", "local_chat"), [([], None, False), (["--chat"], True, True), (["--no-chat"], False, False)]
)
def test_chat_is_three_way_and_local_backends_keep_reading_it(
    flag: list[str], chat: bool | None, local_chat: bool
) -> None:
    """One flag (RunConfig.chat): the local engines' chat template follows it, raw text when not given."""
    from harness.calling.backends.choose import chat_mode
    from harness.cli.configs import config_from_args

    config = config_from_args(run_parser().parse_args(["--model", "x", "--backend", "hf", *flag]))
    assert config.chat is chat and chat_mode(config) is local_chat


def test_decoding_flags_reach_the_run_config() -> None:
    from harness.cli.configs import config_from_args

    argv = ["--model", "x", "--stop", "\n", "--stop", "###", "--max-tokens", "5", "--parse", "strict"]
    config = config_from_args(run_parser().parse_args([*argv, "--shot-sampler", "seeded", "--scoring", "expected"]))
    assert config.stop == ("\n", "###") and config.max_tokens == 5 and config.parse == "strict"
    assert (config.shot_sampler, config.scoring) == ("seeded", "expected")  # parsed; validate.py decides
    default = config_from_args(run_parser().parse_args(["--model", "x"]))
    assert (default.stop, default.max_tokens, default.shot_sampler, default.scoring, default.parse) == (
        (),
        20,
        "reference",
        "parsed",
        "first-number",
    )
