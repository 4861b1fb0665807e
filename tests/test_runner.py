"""The runner's pure steps: one request per query, shot ids recorded, fallback only for invalid outputs."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from harness.config.settings import RunConfig
from harness.runner import prepare
from harness.scoring.score import score
from harness.types import Completion


def test_prepare_renders_one_request_per_query_with_its_shots(csts_dir: Path) -> None:
    prep = prepare(RunConfig(model="overlap", data_dir=csts_dir, shots=4, instr="short", limit=6))
    assert [r.id for r in prep.requests] == [q.id for q in prep.queries] == [str(i) for i in range(6)]
    for req, shots in zip(prep.requests, prep.shots, strict=True):
        assert len(shots) == 4
        assert all(s.sentence1 in req.prompt for s in shots)
        assert req.max_tokens == 20 and req.temperature == 0.0


def test_score_uses_fallback_only_for_invalid_and_never_for_errors(csts_dir: Path) -> None:
    prep = prepare(RunConfig(model="overlap", data_dir=csts_dir, limit=3))
    completions = {
        "0": Completion("0", "Score: 4"),
        "1": Completion("1", "I cannot say."),
        "2": Completion("2", None, error="HTTP 500 after 5 attempts"),
    }
    s0, s1, s2 = score(prep, completions, seed=0)
    assert (s0.parsed, s0.valid, s0.prediction) == (4.0, True, 4.0)
    assert s1.parsed is None and not s1.valid and 1.0 <= s1.prediction <= 5.0  # type: ignore[operator]
    assert s2.prediction is None and s2.error == "HTTP 500 after 5 attempts"


def test_shot_ids_are_recorded(csts_dir: Path) -> None:
    prep = prepare(RunConfig(model="overlap", data_dir=csts_dir, shots=2, limit=2))
    scored = score(prep, None, seed=0)
    assert [s.shot_ids for s in scored] == [tuple(e.id for e in shots) for shots in prep.shots]


def test_score_gives_each_answered_sample_its_reason(csts_dir: Path) -> None:
    prep = prepare(RunConfig(model="overlap", data_dir=csts_dir, limit=5))
    completions = {
        "0": Completion("0", "4", finish_reason="stop"),
        "1": Completion("1", "Sentence 1: a red fox", finish_reason="length"),
        "2": Completion("2", "The two sentences", finish_reason="length"),
        "3": Completion("3", "", refusal="I can't help with that."),
        "4": Completion("4", None, error="HTTP 500"),
    }
    assert [s.reason for s in score(prep, completions, seed=0)] == ["number", "echo", "cut-off", "refusal", "error"]
    assert all(s.reason is None for s in score(prep, None, seed=0))  # a dry run answered nothing


def test_strict_scoring_shares_the_fallback_draw(csts_dir: Path) -> None:
    prep = prepare(RunConfig(model="overlap", data_dir=csts_dir, limit=3))
    completions = {c: Completion(c, t) for c, t in (("0", "4"), ("1", "between 1 and 5: 3"), ("2", "none"))}
    s0, s1, s2 = score(prep, completions, seed=0, strict=True)
    assert (s0.parsed_strict, s0.prediction_strict) == (4.0, 4.0)
    assert s1.parsed == 1.0 and s1.parsed_strict is None and s1.prediction_strict not in (None, 1.0)
    assert s2.prediction_strict == s2.prediction  # invalid both ways: the same seeded draw
    assert all(s.parsed_strict is None for s in score(prep, completions, seed=0))  # off unless asked


def test_max_tokens_reaches_every_request(csts_dir: Path) -> None:
    prep = prepare(RunConfig(model="overlap", data_dir=csts_dir, limit=3, max_tokens=5))
    assert {r.max_tokens for r in prep.requests} == {5}


def test_new_options_at_their_defaults_keep_old_config_hashes(csts_dir: Path) -> None:
    """Runs made before --parse/--max-tokens/... existed must still be reused by sweeps."""
    from harness.runner import plan

    base = RunConfig(model="overlap", data_dir=csts_dir, limit=3)
    record = plan(base).record
    assert not {"chat", "stop", "max_tokens", "scoring", "parse"} & set(record)
    # The default sampler became `reference` (issue 45): hashed as `--shot-sampler reference` was, and `seeded` as
    # the old default was, so runs under either keep their hashes.
    assert record["shot_sampler"] == "reference"
    assert "shot_sampler" not in plan(dataclasses.replace(base, shot_sampler="seeded")).record
    changed = plan(dataclasses.replace(base, max_tokens=5, parse="strict")).record
    assert (changed["max_tokens"], changed["parse"]) == (5, "strict")
    assert changed["config_hash"] != record["config_hash"]


def test_each_variant_is_one_module_chosen_by_one_match() -> None:
    import pytest

    from harness.runner import variant_of
    from harness.types import HarnessError
    from harness.variants import qa, qa_embed, sentences
    from harness.variants.base import Variant

    chosen = {v: variant_of(RunConfig(model="m", variant=v)) for v in ("sentences", "qa", "qa-embed")}
    assert chosen == {"sentences": sentences, "qa": qa, "qa-embed": qa_embed}
    wanted = [n for n in vars(Variant) if not n.startswith("_")]
    assert len(wanted) == 8 and all(callable(getattr(m, n)) for m in chosen.values() for n in wanted)
    with pytest.raises(HarnessError, match="unknown variant 'nope'"):
        variant_of(RunConfig(model="m", variant="nope"))


def test_each_variant_names_its_own_template_range_and_run_label(csts_dir: Path) -> None:
    """The qa variants render no scoring prompt before answers exist; qa-embed predicts cosines."""
    preps = {
        v: prepare(RunConfig(model="gpt-4o", data_dir=csts_dir, limit=3, variant=v, dry_run=True))
        for v in ("qa", "qa-embed")
    }
    assert preps["qa"].requests == preps["qa-embed"].requests == ()
    assert preps["qa"].renderer.name.endswith("qa.j2") and preps["qa-embed"].renderer.name.endswith("qa-answer.j2")
    from harness.variants import qa_embed

    assert qa_embed.score_range(preps["qa-embed"].dataset) == (-1.0, 1.0)
    assert qa_embed.run_label(preps["qa-embed"]) == "qa-embed"


def test_score_reuses_the_parse_made_as_each_answer_arrived(csts_dir: Path) -> None:
    prep = prepare(RunConfig(model="overlap", data_dir=csts_dir, limit=2))
    completions = {"0": Completion("0", "4"), "1": Completion("1", "2")}
    s0, s1 = score(prep, completions, seed=0, parsed_already={"0": 3.0})  # as dispatch.call recorded it
    assert (s0.parsed, s1.parsed) == (3.0, 2.0)  # "0" not parsed again; "1" (not recorded) parsed here


def test_the_drawn_shots_are_part_of_the_config_hash(csts_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A change to the draw alone (here: the sampler's generator seeded otherwise) must make a new config_hash,
    so that a sweep never reuses a cell whose prompts carry other shots. Zero-shot runs keep their old hash."""
    import random

    from harness.prompting import fewshot
    from harness.runner import plan, shots_hash

    config = RunConfig(model="overlap", data_dir=csts_dir, limit=4, shots=2, shot_sampler="seeded")
    before = plan(config).record
    assert before["shots_hash"] == shots_hash(prepare(config))
    monkeypatch.setattr(fewshot, "query_rng", lambda seed, purpose, qid: random.Random(f"{seed}/{qid}/changed"))
    after = plan(config).record
    assert after["shots_hash"] != before["shots_hash"]
    assert after["config_hash"] != before["config_hash"]
    assert {k: v for k, v in after.items() if k not in ("shots_hash", "config_hash")} == {
        k: v for k, v in before.items() if k not in ("shots_hash", "config_hash")
    }
    assert "shots_hash" not in plan(dataclasses.replace(config, shots=0)).record


def test_shots_hash_is_the_ids_of_every_querys_shots(csts_dir: Path) -> None:
    import hashlib
    import json

    from harness.runner import shots_hash

    prep = prepare(RunConfig(model="overlap", data_dir=csts_dir, limit=3, shots=2))
    drawn = [[q.id, [s.id for s in shots]] for q, shots in zip(prep.queries, prep.shots, strict=True)]
    assert shots_hash(prep) == hashlib.sha256(json.dumps(drawn, separators=(",", ":")).encode()).hexdigest()[:16]
