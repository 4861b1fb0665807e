"""results/read.py: run folders read back (old layouts included), sweep folders expanded, finished runs found."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.results.read import expand, finished_runs, load_run, reason_of, setting, sweep_run_dirs, written_run
from harness.results.write import write_run
from harness.types import HarnessError, Scored

CONFIG = {"dataset": "csts", "split": "validation", "model": "m", "shots": 2, "label_range": [1, 5],
          "template": "templates/csts/t5-long.j2", "config_hash": "h1"}  # fmt: skip


def scored(i: int, **kw: object) -> Scored:
    fields: dict = dict(id=str(i), prompt="p", shot_ids=(), output="3", parsed=3.0, valid=True, prediction=3.0,
                        label=2.0)  # fmt: skip
    return Scored(**(fields | kw))


def run_folder(results: Path, name: str, config: dict | None = None, metrics: dict | None = None) -> Path:
    samples = [scored(0, reason="number"), scored(1, output="x", parsed=None, valid=False, prediction=4.2)]
    return write_run(results, name, config or CONFIG, samples, {"n": 2} if metrics is None else metrics).run_dir


def test_a_run_reads_back_with_its_paper_coordinates(tmp_path: Path) -> None:
    config = CONFIG | {"subset": "reannotated-test", "variant": "qa"}
    run = load_run(run_folder(tmp_path, "r1", config))
    assert run.samples[1].prediction == 4.2 and run.label_range == (1.0, 5.0)
    assert (run.template, run.instr) == ("t5-long", "long")  # the T5 layout of the long instruction
    assert run.split == "reannotated-test-30pct"  # as paper_results.csv names it
    assert (run.variant, run.labels, run.dry_run) == ("qa-answers", "original", False)
    assert run.stored_metrics == {"n": 2}


def test_samples_written_before_reason_codes_get_them_derived(tmp_path: Path) -> None:
    run_dir = run_folder(tmp_path, "old")
    lines = [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]
    lines.append(lines[0] | {"id": "2", "parsed": 9.0})  # out of the label range
    lines.append(lines[0] | {"id": "3", "error": "timeout", "prediction": None})
    (run_dir / "samples.jsonl").write_text("".join(json.dumps({k: v for k, v in x.items() if k != "reason"}) + "\n"
                                                   for x in lines))  # fmt: skip
    assert [e["reason"] for e in load_run(run_dir).extras] == ["number", "no-number", "out-of-range", "error"]
    assert reason_of({"reason": "refusal"}, (1, 5)) == "refusal"
    assert reason_of({"prediction": None}, (1, 5)) is None  # a dry run asked nothing


def test_settings_an_old_config_lacks_take_the_old_defaults() -> None:
    assert setting({}, "parse") == "first-number" and setting({}, "max_tokens") == 20
    assert setting({"backend": "openai"}, "chat") is True  # API backends always sent one chat message
    assert setting({"settings": {"stop": []}}, "stop") is None
    assert setting({"backend_params": {"sent": {"max_completion_tokens": 99}}}, "max_tokens") == 99


def test_a_broken_folder_is_one_line(tmp_path: Path) -> None:
    run_dir = run_folder(tmp_path, "r1")
    (run_dir / "config.json").write_text("{not json")
    with pytest.raises(HarnessError, match="is not a readable run folder"):
        load_run(run_dir)


def test_expand_takes_runs_sweeps_and_folders_of_runs_each_once(tmp_path: Path) -> None:
    a, b = run_folder(tmp_path, "a"), run_folder(tmp_path, "b")
    (tmp_path / ".c.staging-1-ab").mkdir()  # a folder still being staged is no run
    sweep = tmp_path / "sweep-1"
    sweep.mkdir()
    (sweep / "sweep.json").write_text(json.dumps({"cells": [{"run_dir": "b"}, {"run_dir": "a"}]}))
    assert sweep_run_dirs(sweep) == [b, a]
    assert expand([sweep, a, tmp_path]) == [b, a]
    with pytest.raises(HarnessError, match="missing does not exist"):
        expand([tmp_path / "missing"])
    (sweep / "sweep.json").write_text("{}")
    with pytest.raises(HarnessError, match="sweep.json is unreadable"):
        expand([sweep])


def test_finished_runs_are_the_newest_complete_answered_ones(tmp_path: Path) -> None:
    run_folder(tmp_path, "r-20260101")
    newest = run_folder(tmp_path, "r-20260102")
    run_folder(tmp_path, "r-20260103", metrics={"n": 2, "errors": 1})  # failed requests: to be retried
    run_folder(tmp_path, "r-20260104", metrics={"dry_run": True})  # answered nothing
    run_folder(tmp_path, "other", CONFIG | {"config_hash": "h2"}, metrics=None).joinpath("metrics.json").unlink()
    assert finished_runs(tmp_path) == {"h1": newest}
    assert finished_runs(tmp_path / "nowhere") == {}


@pytest.mark.parametrize(
    "settings",
    [{"model": "overlap", "shots": 2}, {"model": "random", "parse": "strict", "split": "test"}],
    ids=["overlap", "random-strict-test"],
)
def test_written_run_is_what_load_run_reads_back(settings: dict, tmp_path: Path, csts_dir: Path) -> None:
    """A sweep reports from written_run (what it holds in memory); `report` from load_run (the folder): the same."""
    from harness.config.settings import RunConfig
    from harness.runner import run

    config = RunConfig(data_dir=csts_dir, results_dir=tmp_path, limit=8, progress=False, **settings)
    result = run(config)
    read = load_run(result.run_dir)
    assert written_run(result.run_dir, result.config, result.records, result.metrics) == read
    assert written_run(result.run_dir, result.config, result.records, result.metrics, result.samples) == read
    assert len(read.samples) == 8


def test_a_setting_is_read_from_the_top_then_settings_then_the_old_default() -> None:
    from harness.results.read import OLD_DEFAULTS

    assert setting({"seed": 1, "settings": {"seed": 2}}, "seed") == 1
    assert setting({"seed": None, "settings": {"seed": 2}}, "seed") == 2
    assert setting({"settings": {"seed": None}}, "seed") == OLD_DEFAULTS.get("seed")
    assert setting({"parse": "strict", "settings": {"parse": "first-number"}}, "parse") == "strict"
    assert setting({"stop": ["###"]}, "stop") == ["###"] and setting({"stop": []}, "stop") is None
    assert setting({"template": "templates/csts/long.j2"}, "template") == "long"
    assert setting({}, "template") == "none" and setting({}, "shot_sampler") == "seeded"
    assert setting({"backend_params": {"sent": {"max_tokens": 7}}}, "max_tokens") == 7
    sent = {"max_completion_tokens": 99, "max_tokens": 7}
    assert setting({"backend_params": {"sent": sent}}, "max_tokens") == 99
    assert setting({"max_tokens": 5, "backend_params": {"sent": sent}}, "max_tokens") == 5


@pytest.mark.parametrize(
    ("config", "chat"),
    [
        ({"backend": "vllm", "backend_params": {"chat_template": True}}, True),
        ({"backend": "vllm", "backend_params": {"chat_template": None}}, False),
        ({"backend": "openai", "backend_params": {"chat": False}}, False),
        ({"backend": "openai", "backend_params": {"chat": "yes"}}, True),  # not a bool: the old API default
        ({"backend": "anthropic"}, True),
        ({"backend": "hf", "settings": {"local": {"chat": True}}}, True),
        ({"backend": "hf", "settings": {"local": {"chat": False}}}, False),
        ({"backend": "hf"}, None),
        ({}, None),
        ({"chat": False, "backend": "openai"}, False),
    ],
)
def test_chat_is_what_the_run_recorded_else_what_its_backend_did(config: dict, chat: bool | None) -> None:
    assert setting(config, "chat") is chat


def test_reason_codes_derived_for_old_samples() -> None:
    assert reason_of({"error": "x", "prediction": 3.0, "valid": True}, (1, 5)) == "error"
    assert reason_of({"prediction": 3.0, "valid": False}, (1, 5)) == "no-number"
    assert reason_of({"prediction": 3.0, "valid": True, "parsed": 5.0}, (1, 5)) == "number"
    assert reason_of({"prediction": 3.0, "valid": True, "parsed": 5.5}, (1, 5)) == "out-of-range"
    assert reason_of({"prediction": 3.0, "valid": True, "parsed": 0.0}, (0, 5)) == "number"
    assert reason_of({"prediction": 3.0, "valid": True}, (1, 5)) == "number"
    assert reason_of({"reason": "", "prediction": 2.0, "valid": True}, (1, 5)) == "number"


def test_a_run_folders_coordinates_without_newer_keys(tmp_path: Path) -> None:
    run = load_run(run_folder(tmp_path, "plain", {k: v for k, v in CONFIG.items() if k != "template"}))
    assert (run.split, run.variant, run.labels, run.template, run.instr) == (
        "validation",
        "sentences",
        "original",
        "none",
        "none",
    )
    assert run.identity()["template"] == "none" and run.identity()["max_tokens"] == 20
    assert load_run(run_folder(tmp_path, "sb", CONFIG | {"variant": "qa-embed"})).variant == "qa-embed"


def test_dry_run_folders_are_known_by_their_metrics_or_their_unanswered_samples(tmp_path: Path) -> None:
    from harness.results.read import Run

    unanswered = (scored(0, output=None, parsed=None, valid=False, prediction=None),)
    failed = (scored(1, output=None, parsed=None, valid=False, prediction=None, error="HTTP 500"),)
    assert Run(tmp_path, CONFIG, unanswered, {}, ()).dry_run
    assert not Run(tmp_path, CONFIG, unanswered + failed, {}, ()).dry_run
    assert not Run(tmp_path, CONFIG, (*unanswered, scored(2)), {}, ()).dry_run
    assert not Run(tmp_path, CONFIG, (), {}, ()).dry_run
    assert Run(tmp_path, CONFIG, (scored(2),), {"dry_run": True}, ()).dry_run


def test_finished_runs_skip_staging_folders_and_configs_without_a_hash(tmp_path: Path) -> None:
    run_folder(tmp_path, "no-hash", {k: v for k, v in CONFIG.items() if k != "config_hash"})
    staged = run_folder(tmp_path, "x")
    staged.rename(tmp_path / ".x.staging")
    assert finished_runs(tmp_path) == {}
    kept = run_folder(tmp_path, "y", metrics={"n": 2, "errors": 0})
    assert finished_runs(tmp_path) == {"h1": kept}


def test_expand_lists_a_folder_reached_twice_once(tmp_path: Path) -> None:
    a = run_folder(tmp_path / "results", "a")
    (tmp_path / "link").symlink_to(a)
    assert expand([a, tmp_path / "link", tmp_path / "results"]) == [a]


def _sha256(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


def _bundled(name: str) -> str:
    from harness.prompting.render import TEMPLATES_DIR

    return _sha256((TEMPLATES_DIR / name).read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("config", "own"),
    [
        ({"template": "csts/short.j2"}, False),  # an older record: no hashes, taken as written
        ({"template": "csts/short.j2", "template_hashes": {}}, False),
        ({"template": "csts/short.j2", "template_hashes": "x"}, False),
        ({"template": "csts/short.j2", "template_hashes": {"csts/short.j2": _bundled("csts/short.j2")}}, False),
        ({"template": "short.j2", "template_hashes": {"short.j2": _bundled("csts/short.j2")}}, False),  # a copy
        ({"template": "short.j2", "template_hashes": {"short.j2": _sha256("mine")}}, True),  # issue 41
        ({"template": "mine.j2", "template_hashes": {"mine.j2": _sha256("mine")}}, True),  # no bundled namesake
        # the dataset names the bundled folder an unprefixed name is looked up in
        (
            {"dataset": "stsb", "template": "short.j2", "template_hashes": {"short.j2": _bundled("stsb/short.j2")}},
            False,
        ),
        ({"template": "short.j2", "template_hashes": {"short.j2": _bundled("stsb/short.j2")}}, True),
        ({"template": "x.j2", "template_hashes": {"../csts/short.j2": _bundled("csts/short.j2")}}, True),  # no escape
        (
            {"template": "csts/short.j2", "template_hashes": {"csts/short.j2": _bundled("csts/short.j2"), "x.j2": "0"}},
            True,  # an include of one's own
        ),
    ],
)
def test_a_template_is_ones_own_when_its_text_is_not_the_bundled_files(config: dict, own: bool) -> None:
    from harness.results.read import OWN, own_template

    assert own_template(config) is own
    stem = Path(config["template"]).stem
    assert setting(config, "template") == (f"{stem} {OWN}" if own else stem)


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"prediction": "3.5"}, "prediction '3.5' is not a finite number"),
        ({"prediction": True}, "prediction 'True' is not a finite number"),
        ({"label": float("nan")}, "label 'nan' is not a finite number"),
        ({"parsed": float("-inf")}, "parsed '-inf' is not a finite number"),
        ({"expected_mass": [1]}, "expected_mass '[1]' is not a finite number"),
        ({"prediction_strict": "x" * 100}, "prediction_strict '" + "x" * 40 + "' is not a finite number"),
        ({"id": 3}, "id or prompt is not a string"),
        ({"prompt": None}, "id or prompt is not a string"),
        ({"shot_ids": "12"}, "shot_ids is not a list of ids"),
        ({"shot_ids": [1, 2]}, "shot_ids is not a list of ids"),
        ({"reasoning": {"a": 1}}, "reasoning is not a string"),
        ({"pair": 7}, "pair is not a string"),
    ],
)
def test_a_sample_value_that_cannot_be_what_it_names_is_one_line(tmp_path: Path, changes: dict, says: str) -> None:
    """Issue 41: checked as read, so no report computes with a string where a number belongs (or crashes on it)."""
    run_dir = run_folder(tmp_path, "r1")
    lines = (run_dir / "samples.jsonl").read_text().splitlines()
    lines[1] = json.dumps(json.loads(lines[1]) | changes)
    (run_dir / "samples.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(HarnessError, match="is not a readable run folder: " + re.escape(says) + "$"):
        load_run(run_dir)


@pytest.mark.parametrize(
    "changes",
    [{"prediction": 3, "label": None, "parsed": 0}, {"shot_ids": ["4", "9"], "pair": "2"}, {"shot_ids": None}],
)
def test_a_sample_whose_values_are_what_they_name_reads(tmp_path: Path, changes: dict) -> None:
    run_dir = run_folder(tmp_path, "r1")
    lines = (run_dir / "samples.jsonl").read_text().splitlines()
    lines[1] = json.dumps(json.loads(lines[1]) | changes)
    (run_dir / "samples.jsonl").write_text("\n".join(lines) + "\n")
    sample = load_run(run_dir).samples[1]
    assert sample.shot_ids == tuple(changes.get("shot_ids") or ())
    assert {k: getattr(sample, k) for k in changes if k != "shot_ids"} == {
        k: v for k, v in changes.items() if k != "shot_ids"
    }


def test_json_nested_past_the_decoder_is_one_line(tmp_path: Path) -> None:
    run_dir = run_folder(tmp_path, "r1")
    (run_dir / "samples.jsonl").write_text("[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(HarnessError, match="is not a readable run folder"):
        load_run(run_dir)
    (run_dir / "samples.jsonl").write_text("[1]\n")
    with pytest.raises(HarnessError, match="is not a readable run folder: a line is not a JSON object"):
        load_run(run_dir)
