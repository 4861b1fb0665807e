"""The embedding protocol's options (--variant case, Zhang et al. 2025; harness/variants/case.py), kept apart
from options.py so that the run command's other groups stay as they are."""

from __future__ import annotations

import argparse

from harness.config.settings import EmbedOptions


def add_case_args(g: argparse._ArgumentGroup) -> None:
    g.add_argument(
        "--case-setting",
        metavar="NAME",
        help="the encoding whose cosines are the predictions: cond-c, cond, sent-c, sent (Zhang et al. 2025, "
        "Table 1) or plain (the sentence alone); every setting is in metrics.json (default: cond-c; STS-B: plain)",
    )
    g.add_argument(
        "--case-inputs",
        default=EmbedOptions.inputs,
        metavar="STYLE",
        help="instruct: the paper's instructions for LLM encoders; concat: condition and sentence concatenated, "
        "as for its MLM encoders",
    )
    g.add_argument(
        "--case-ffn",
        default=EmbedOptions.ffn,
        metavar="KIND",
        help="none, linear or nonlinear: train the CASE projection on the C-STS train split, epoch chosen on "
        "validation, and score with it",
    )
    g.add_argument("--case-ffn-dim", type=int, default=EmbedOptions.ffn_dim, metavar="N", help="projected dimensions")
    g.add_argument(
        "--case-ffn-epochs",
        type=int,
        default=EmbedOptions.ffn_epochs,
        metavar="N",
        help="training epochs (the best kept)",
    )


def case_options(a: argparse.Namespace) -> EmbedOptions:
    return EmbedOptions(
        setting=a.case_setting,
        inputs=a.case_inputs,
        ffn=a.case_ffn,
        ffn_dim=a.case_ffn_dim,
        ffn_epochs=a.case_ffn_epochs,
    )
