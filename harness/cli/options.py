"""The run command's parser, made from the settings' declarations (harness/config/settings.py: every option with
its help, default, choices and --help section), and the help text around them.

Nothing is checked here beyond what argparse parses; every check of the values lives in validate.py, so
a RunConfig built by a sweep or a test is held to the same rules as one built from the command line.
"""

from __future__ import annotations

import argparse

from harness.cli.declared import add_settings
from harness.cli.parser import Parser
from harness.config import settings

# The sub-commands, in the order `--help` lists them (cli.COMMANDS maps each to its function).
COMMAND_HELP = {
    "extract": "decrypt the C-STS release into a directory",
    "data-report": "split sizes, label distributions, lengths, agreement of the label sets",
    "overlap": "text shared between the few-shot pool and the evaluated split",
    "report": "tables (md/csv/tex), plots and CIs from run or sweep folders; calls no model",
    "compare": "paired comparison of two runs on the items both answered",
    "batches": "the batches submitted with --batch: pending, finished, expired, with counts; calls no API",
    "errors": "annotation-error candidates from a qa run's answers (Tu et al. 2024, §4.2), scored",
    "reannotate": "LLM re-annotation (Zhang et al. 2025): a labels file for --labels, with its agreement",
    "reannotate-merge": "two models' reannotate ratings and the original labels merged: Zhang et al.'s V()",
}
EXIT_CODES = """exit status:
  0    every query has a prediction
  2    bad input: one `error:` line on stderr, nothing sent, nothing written
  3    run folder written, but some requests failed (a sweep: in any cell); the same command again retries them
  4    --batch: batches submitted or still running, nothing written yet; the same command collects them
  130  interrupted (Ctrl-C, SIGINT)
  143  terminated (SIGTERM)"""
DATA = ("data_dir", "archive", "password_file")  # where C-STS comes from: a directory, or the release and password


def add_data_args(p: argparse.ArgumentParser) -> None:
    """Where C-STS comes from: an extracted directory, or the encrypted release and its password."""
    add_settings(p, settings.RunConfig, DATA)


def run_parser() -> Parser:
    commands = "\n".join(f"  {name:<12} {text}" for name, text in COMMAND_HELP.items())
    p = Parser(
        prog="run_eval.py",
        usage="%(prog)s --model MODEL [options]\n       %(prog)s COMMAND [options]   (COMMAND: "
        + ", ".join(COMMAND_HELP)
        + ")",
        description="Evaluate a model by prompting on C-STS or STS-B.\n\n"
        "A plain run is zero-shot (k=0: --shots 0) with no instruction (--instr none); the paper's protocol "
        "(Deshpande et al. 2023) is --shots 4 --instr long.\nComma lists in --model, --shots, --instr and "
        "--dataset run a sweep: every combination, each its own run folder.",
        epilog=f"commands (`run_eval.py COMMAND --help` for their options):\n{commands}\n\n{EXIT_CODES}",
    )
    # RunConfig is looked up when called, so that a test can declare one more option (tests/cli/test_toy_option.py)
    add_settings(p, settings.RunConfig, grid=True)
    return p
