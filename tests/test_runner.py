"""The runner's pure steps: one request per query, shot ids recorded, fallback only for invalid outputs."""

from __future__ import annotations

from pathlib import Path

from harness.runner import prepare, score
from harness.types import Completion, RunConfig


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
