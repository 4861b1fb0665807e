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


def _value(config: RunConfig, d: Declared) -> Any:
    value: Any = config
    for name in d.path:
        if value is None:
            return None
        value = getattr(value, name)
    return value
