"""The run's identity is made from the settings' marks (harness/config/keys.py): every REQUEST, READING or ITEMS
setting changed from its default enters it, and no other does."""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path
from typing import Any

import pytest

from harness.config.keys import identity_settings, recorded
from harness.config.option import IDENTITY_MARKS, Affects, Declared, declared, name_of, value_at
from harness.config.settings import ApiOptions, BatchOptions, RunConfig

EVERY = [d for d in declared(RunConfig) if d.option.affects is not None]


def _other(d: Declared) -> Any:
    """A value of the setting's type other than its default."""
    default = d.default
    if d.path[-1] == "batch":
        return BatchOptions()
    if isinstance(default, bool):
        return not default
    if isinstance(default, int):
        return default + 1
    if isinstance(default, float):
        return default * 2 if default else 0.5
    if isinstance(default, tuple):
        return (*default, "x")
    if isinstance(default, Path):
        return Path("elsewhere")
    if isinstance(default, str):
        return default + "-other"
    assert default is None, d
    if d.path[-1] == "shard":
        return (1, 2)
    hint = str(typing.get_type_hints(RunConfig).get(d.path[0], ""))
    return True if d.path[-1] in ("chat", "reasoning") else 3 if "int" in hint and len(d.path) == 1 else "other"


def _replace(config: Any, path: tuple[str, ...], value: Any) -> Any:
    if len(path) == 1:
        return dataclasses.replace(config, **{path[0]: value})
    inner = getattr(config, path[0])
    return dataclasses.replace(config, **{path[0]: _replace(inner, path[1:], value)})


BASE = RunConfig(model="m", api=ApiOptions(batch=BatchOptions(poll=5.0)))  # --batch on: its options have values


@pytest.mark.parametrize("d", EVERY, ids=name_of)
def test_a_changed_setting_is_in_the_identity_exactly_when_its_marks_say_so(d: Declared) -> None:
    base = RunConfig(model="m") if d.path == ("api", "batch") else BASE
    changed = _replace(base, d.path, _other(d))
    assert value_at(changed, d.path) != value_at(base, d.path)
    before, after = identity_settings(base), identity_settings(changed)
    keyed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    if d.option.affects & IDENTITY_MARKS and d.path != ("shard",):  # a part is recorded beside the whole's hash
        assert keyed == {name_of(d)}
    else:
        assert keyed == set()


def test_identity_values_are_as_config_json_holds_them() -> None:
    config = RunConfig(model="m", stop=("a",), answers=Path("x/answers.jsonl"), think_tags="none")
    assert identity_settings(config) == {
        "model": "m",
        "stop": ["a"],
        "answers": "x/answers.jsonl",
        "think_tags": "none",
        "shot_sampler": "reference",  # the default since issue 45, hashed against the one before (HASHED_AGAINST)
    }
    # Nothing at the default it was hashed against is recorded: old hashes hold
    assert identity_settings(RunConfig(model="")) == {"shot_sampler": "reference"}
    assert identity_settings(RunConfig(model="", shot_sampler="seeded")) == {}


def test_recorded_reads_a_settings_record_and_fills_what_an_older_one_lacks() -> None:
    settings = {"think_tags": "none", "chat": None, "api": {"max_reply_mb": 2.0}}
    got = {name_of(d): v for d, v in recorded(settings, Affects.READING).items()}
    assert got["think_tags"] == "none" and got["api.max_reply_mb"] == 2.0
    assert got["parse"] == "first-number"  # not in the record: the declared default
    assert got["embed.ffn_dim"] == 512
    assert {name_of(d): v for d, v in recorded(settings, Affects.REQUEST).items()}["chat"] is None  # a recorded None


def test_think_tags_makes_another_run_that_no_rerun_or_sweep_reuses(csts_dir: Path) -> None:
    """Runs that read replies otherwise (--think-tags, --max-reply-mb) have their own config_hash (issue 41: a
    sweep reused a run read with other think tags as this one's)."""
    from harness.runner import plan

    base = RunConfig(model="overlap", data_dir=csts_dir, limit=3)
    hashes = {
        plan(c).record["config_hash"]
        for c in (
            base,
            dataclasses.replace(base, think_tags="none"),
            dataclasses.replace(base, api=dataclasses.replace(base.api, max_reply_mb=1.0)),
            dataclasses.replace(base, api=dataclasses.replace(base.api, timeout=5.0)),  # OPERATION: the same run
        )
    }
    assert len(hashes) == 3
