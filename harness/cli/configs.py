"""The parsed options as configs: a RunConfig for one run; for a sweep, its base RunConfig and the grid.

The grid options (--dataset, --model, --instr, --shots) take one value or a comma list; argparse splits the
lists itself (`CommaList` is their `type=`), so a sweep is built from the parsed namespace like a single run:
`config_from_args` takes each option's first value, `grid_from_args` the lists (sweep.cells combines them).
Every option, its default and its field are declared once, in harness/config/settings.py.
"""

from __future__ import annotations

import argparse
from typing import Any

from harness.cli.declared import build
from harness.config import settings
from harness.sweep import GRID_FIELDS


def grid_from_args(a: argparse.Namespace) -> dict[str, list[Any]]:
    """{RunConfig field: values} for each grid option given as a comma list; {} means a single run."""
    return {name: getattr(a, name) for name in GRID_FIELDS if isinstance(getattr(a, name), list)}


def config_from_args(a: argparse.Namespace) -> settings.RunConfig:
    """The parsed options as a RunConfig (validate.validate checks the values). RunConfig is looked up when
    called, so that a test can declare one more option (tests/cli/test_toy_option.py)."""
    config: settings.RunConfig = build(settings.RunConfig, a)
    return config
