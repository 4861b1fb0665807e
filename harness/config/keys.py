"""The keys made from the settings' `affects=` marks (harness/config/option.py `Affects`), in one place: what of a
run's settings enters its identity (config.json's config_hash), and the marked settings of a recorded config.json.

A key built here cannot forget a setting: a new option declares its marks and is in every key they name.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.config.option import IDENTITY_MARKS, Affects, Declared, marked, name_of, value_at
from harness.config.settings import RunConfig

# A --shard part is identified as the whole run plus its part (harness/runner.py config_record): the part is
# recorded beside the whole's hash, never in it.
_PART = ("shard",)

# Defaults changed after runs were hashed: a setting is compared with the default it had then, so runs made before
# and after the change keep their config_hash (and a sweep keeps reusing them). The reference code's shot stream
# became the default sampler in issue 45; runs drawn either way still differ in their shots_hash.
HASHED_AGAINST: dict[tuple[str, ...], Any] = {("shot_sampler",): "seeded"}


def _plain(value: Any) -> Any:
    """A value as config.json holds it (a Path as its text, a tuple as a list), so that a RunConfig's value
    and a recorded one compare equal."""
    return json.loads(json.dumps(value, default=str)) if not isinstance(value, Path) else str(value)


def identity_settings(config: RunConfig) -> dict[str, Any]:
    """Every REQUEST, READING or ITEMS setting whose value is not its default, by name (think_tags,
    api.max_reply_mb): part of the run's identity. Only when not the default, so that a run made before a setting
    existed keeps its config_hash (and a sweep keeps reusing it)."""
    defaults = RunConfig(model="")
    out: dict[str, Any] = {}
    for d in marked(RunConfig, IDENTITY_MARKS):
        if d.path == _PART:
            continue
        value = value_at(config, d.path)
        if value != HASHED_AGAINST.get(d.path, value_at(defaults, d.path)):
            out[name_of(d)] = _plain(value)
    return out


def recorded(settings: dict[str, Any], marks: Affects) -> dict[Declared, Any]:
    """The settings carrying any of `marks` as a config.json `settings` records them; a setting an older record
    lacks takes its declared default (what the harness did before it existed)."""
    out: dict[Declared, Any] = {}
    for d in marked(RunConfig, marks):
        out[d] = value_at(settings, d.path) if _holds(settings, d.path) else _plain(d.default)
    return out


def _holds(settings: dict[str, Any], path: tuple[str, ...]) -> bool:
    """Whether the record has the setting at all (a recorded None is a value: the default of an optional one)."""
    obj: Any = settings
    for name in path:
        if not isinstance(obj, dict) or name not in obj:
            return False
        obj = obj[name]
    return True
