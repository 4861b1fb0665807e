"""Every declared setting says what it changes (harness/config/option.py `Affects`), consistently: the keys made
from these marks (cache, identity, shard merge, comparability) cannot forget a setting that has none."""

from __future__ import annotations

import dataclasses

import pytest

from harness.config.option import Affects, Option, declared, inconsistent, marked, name_of, value_at
from harness.config.settings import RunConfig

EVERY = list(declared(RunConfig))


def test_every_declared_field_is_walked() -> None:
    """The walk reaches the sections' fields and the --batch switch as well as RunConfig's own."""
    names = {name_of(d) for d in EVERY}
    assert {"model", "think_tags", "api.max_reply_mb", "api.batch", "api.batch.poll", "local.dtype"} <= names
    assert {"embed.setting", "embed.ffn_dim"} <= names
    # every dataclass field that is an option is among them (a field without option metadata is none: `started`)
    fields = [f for f in dataclasses.fields(RunConfig) if "option" in f.metadata]
    assert {f.name for f in fields} <= names


@pytest.mark.parametrize("d", EVERY, ids=name_of)
def test_every_declared_field_is_marked_consistently(d) -> None:
    assert inconsistent(d.option.affects) is None, f"{d.flag}: {inconsistent(d.option.affects)}"


@pytest.mark.parametrize(
    ("marks", "why"),
    [
        (None, "no affects= mark"),
        (Affects(0), "no affects= mark"),
        (Affects.PRESENTATION | Affects.READING, "PRESENTATION combined with READING"),
        (Affects.OPERATION | Affects.REQUEST | Affects.ITEMS, "OPERATION combined with REQUEST|ITEMS"),
        (Affects.PRESENTATION | Affects.OPERATION, "PRESENTATION combined with OPERATION"),
    ],
)
def test_an_unmarked_or_mixed_declaration_is_refused(marks, why) -> None:
    assert (inconsistent(marks) or "").startswith(why)


@pytest.mark.parametrize("marks", [Affects.PRESENTATION, Affects.OPERATION, Affects.REQUEST | Affects.PUBLISHED])
def test_consistent_marks_pass(marks) -> None:
    assert inconsistent(marks) is None


def test_a_new_unmarked_option_fails_the_walk() -> None:
    """What the walk above would meet for an option declared without affects=."""

    @dataclasses.dataclass(frozen=True)
    class New:
        x: int = dataclasses.field(default=0, metadata={"option": Option("x")})

    assert [inconsistent(d.option.affects) for d in declared(New)] == ["no affects= mark"]


def test_marked_and_value_at() -> None:
    config = RunConfig(model="m", think_tags="none")
    reading = [name_of(d) for d in marked(RunConfig, Affects.READING)]
    assert reading[:2] == ["seed", "labels"] and "think_tags" in reading and "api.max_reply_mb" in reading
    assert "api.timeout" not in reading and "results_dir" not in reading
    assert value_at(config, ("think_tags",)) == "none"
    assert value_at(config, ("api", "max_reply_mb")) == 32.0
    assert value_at(config, ("api", "batch", "poll")) is None  # --batch off
    assert value_at({"api": {"batch": None}}, ("api", "batch", "poll")) is None
    assert value_at({"api": {}}, ("api", "timeout")) is None  # an older config.json's settings
    assert value_at({"api": "split"}, ("api", "timeout")) is None  # a record with no section where one should be
    assert value_at({"api": [1]}, ("api", "index")) is None


# The marks each setting got (docs/options.md and the issue-41 note list them): a changed mark is a decision,
# made here in the open, never by accident in a declaration.
EXPECTED = {
    "model": "REQUEST|PUBLISHED", "backend": "REQUEST", "dataset": "REQUEST|ITEMS|PUBLISHED",
    "split": "ITEMS|PUBLISHED", "shots": "REQUEST|PUBLISHED", "instr": "REQUEST|PUBLISHED",
    "template": "REQUEST|PUBLISHED", "seed": "REQUEST|READING", "limit": "ITEMS", "shard": "ITEMS",
    "labels": "READING|PUBLISHED", "subset": "ITEMS|PUBLISHED", "subset_seed": "ITEMS|PUBLISHED",
    "variant": "REQUEST|READING|PUBLISHED", "answer_model": "REQUEST|PUBLISHED", "answer_backend": "REQUEST",
    "answers": "REQUEST|PUBLISHED", "data_dir": "PRESENTATION", "archive": "PRESENTATION",
    "password_file": "PRESENTATION", "config_file": "PRESENTATION", "results_dir": "PRESENTATION",
    "run_id": "PRESENTATION", "dry_run": "OPERATION", "progress": "PRESENTATION", "chat": "REQUEST|PUBLISHED",
    "stop": "REQUEST|PUBLISHED", "max_tokens": "REQUEST|PUBLISHED", "shot_sampler": "REQUEST|PUBLISHED",
    "shot_seed": "REQUEST|PUBLISHED", "truncate_input": "REQUEST|PUBLISHED", "scoring": "REQUEST|READING|PUBLISHED",
    "constrain": "REQUEST|READING|PUBLISHED", "parse": "READING", "think_tags": "READING",
    "api.base_urls": "REQUEST", "api.concurrency": "OPERATION", "api.rpm": "OPERATION", "api.tpm": "OPERATION",
    "api.timeout": "OPERATION", "api.max_retries": "OPERATION", "api.wait_for_server": "OPERATION",
    "api.max_reply_mb": "READING", "api.cache": "OPERATION", "api.no_cache": "OPERATION",
    "api.refresh": "OPERATION", "api.max_cost": "OPERATION", "api.prices": "PRESENTATION",
    "api.reasoning": "REQUEST|PUBLISHED", "api.reasoning_tokens": "REQUEST",
    "api.reasoning_effort": "REQUEST", "api.anthropic_greedy": "REQUEST|PUBLISHED",
    "api.batch": "OPERATION", "api.batch.wait": "OPERATION", "api.batch.poll": "OPERATION",
    "api.batch.max_requests": "OPERATION", "local.dtype": "REQUEST", "local.tensor_parallel": "OPERATION",
    "local.data_parallel": "OPERATION", "local.gpu_memory_utilization": "OPERATION", "local.max_model_len": "REQUEST",
    "local.batch_size": "OPERATION", "embed.setting": "READING|PUBLISHED", "embed.inputs": "REQUEST|PUBLISHED",
    "embed.ffn": "READING|PUBLISHED", "embed.ffn_dim": "READING|PUBLISHED", "embed.ffn_epochs": "READING|PUBLISHED",
}  # fmt: skip


def test_the_marks_are_the_decided_ones() -> None:
    got = {name_of(d): d.option.affects.name for d in EVERY if d.option.affects is not None}
    decided = {k: v for k, v in got.items() if k in EXPECTED}
    assert decided == EXPECTED
