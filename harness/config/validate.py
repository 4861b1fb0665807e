"""The checks of a RunConfig's values that need nothing but the values: each field's own check, as its declaration
names it (numbers in range, known choices, files the user named present and regular: harness/config/settings.py),
then the combinations of fields. harness/variants/validate.py `validate_run` runs these first, then what the
backends and variants know (harness/calling/validate.py), in one order, once per run, dry runs alike."""

from __future__ import annotations

from typing import Any

from harness.config.checks import check_run_id
from harness.config.option import Declared, declared
from harness.config.settings import RunConfig
from harness.types import HarnessError

__all__ = ["check_run_id", "validate"]


def validate(config: RunConfig) -> None:
    """Raise HarnessError (one line) for the first thing wrong with this configuration's values."""
    for d in declared(type(config)):
        value = _value(config, d)
        if value is None:  # not given, or in an option group that is off (--batch's without --batch)
            continue
        if isinstance(d.option.choices, tuple) and d.option.choices and value not in d.option.choices:
            raise HarnessError(f"unknown {d.flag} {value!r}; choose from {', '.join(d.option.choices)}")
        if d.option.check is not None:
            d.option.check(value, d.flag)
    if config.api.batch is not None and config.api.no_cache:
        raise HarnessError("--batch keeps answers and batch ids in the response cache: it cannot run with --no-cache")
    _check_items(config)
    if config.repeats > 1 and (config.parse != "first-number" or config.scoring != "parsed"):
        # Each is a reading of one reply; how K of them combine is defined for the parsed score alone.
        raise HarnessError("--repeats combines parsed scores: it cannot run with --parse strict or --scoring expected")


def _check_items(config: RunConfig) -> None:
    """Which items and which shots: one way of choosing each (harness/datasets/items.py, prompting/pinned.py)."""
    chosen = [flag for flag, value in (("--limit", config.limit), ("--sample", config.sample), ("--ids", config.ids))
              if value is not None]  # fmt: skip
    if len(chosen) > 1:
        raise HarnessError(f"{' and '.join(chosen)} each choose the items: give one of them")
    drawn = config.shot_sampler != RunConfig(model="").shot_sampler or config.shot_seed is not None  # not defaults
    if config.shot_ids is not None and drawn:
        raise HarnessError("--shot-ids pins the shots: --shot-sampler and --shot-seed have nothing left to draw")


def _value(config: RunConfig, d: Declared) -> Any:
    value: Any = config
    for name in d.path:
        if value is None:
            return None
        value = getattr(value, name)
    return value
