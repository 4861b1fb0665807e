"""--scoring expected: the pure weighting, its metrics, the vllm mapping (stand-in engine), cache and refusals."""

from __future__ import annotations

import asyncio
import dataclasses
import math
import sqlite3
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from harness.calling.backends.vllm import SCORE_LOGPROBS, VllmBackend
from harness.calling.cache import ResponseCache
from harness.cli.main import main
from harness.cli.summary import EXPECTED, metrics_line
from harness.config.settings import LocalOptions
from harness.scoring.expected import collect_score_probs, expected_metrics, expected_score, score_token_value
from harness.types import Completion, Request, Scored, Usage

STSB, CSTS = (0.0, 5.0), (1.0, 5.0)


def test_score_tokens_are_ascii_integers_0_to_10_with_any_whitespace() -> None:
    assert [score_token_value(t) for t in ("4", " 4", "▁4".replace("▁", " "), "\n3", "10", " 0")] == [4, 4, 4, 3, 10, 0]
    assert [score_token_value(t) for t in ("11", "4.", ".5", "²", "٣", "four", "", " ", "-1")] == [None] * 9


def test_collect_sums_tokens_of_the_same_integer_and_drops_the_rest() -> None:
    probs = collect_score_probs([("4", 0.2), (" 4", 0.1), ("The", 0.5), ("3", 0.2)])
    assert probs == pytest.approx({"4": 0.3, "3": 0.2})
    from_logprobs = collect_score_probs([("4", math.log(0.25)), ("x", math.log(0.75))], logprobs=True)
    assert from_logprobs == pytest.approx({"4": 0.25})


def test_expected_is_the_renormalised_weighted_mean_over_the_valid_range() -> None:
    probs = {"0": 0.1, "1": 0.1, "4": 0.2, "5": 0.1, "7": 0.5}  # 7 is outside both ranges
    value, mass = expected_score(probs, STSB)  # type: ignore[misc]
    assert mass == pytest.approx(0.5)
    assert value == pytest.approx((0 * 0.1 + 1 * 0.1 + 4 * 0.2 + 5 * 0.1) / 0.5)
    value, mass = expected_score(probs, CSTS)  # type: ignore[misc]  # 0 is not a C-STS score
    assert mass == pytest.approx(0.4)
    assert value == pytest.approx((1 * 0.1 + 4 * 0.2 + 5 * 0.1) / 0.4)


def test_expected_stays_in_range_and_is_none_only_without_any_valid_mass() -> None:
    assert expected_score({"9": 1.0}, CSTS) is None
    assert expected_score({}, STSB) is None
    assert expected_score({"3": 1e-9}, CSTS) == pytest.approx((3.0, 1e-9))
    for probs in ({"1": 1.0}, {"5": 0.3}, {"2": 0.5, "3": 0.5}):
        value, _ = expected_score(probs, CSTS)  # type: ignore[misc]
        assert 1.0 <= value <= 5.0


def _scored(i: int, expected: float | None, label: float, mass: float = 0.9, parsed: float = 3.0) -> Scored:
    return Scored(
        id=str(i),
        prompt="p",
        shot_ids=(),
        output="3",
        parsed=parsed,
        valid=True,
        prediction=parsed,
        label=label,
        expected=expected,
        expected_mass=mass,
    )


def test_metrics_use_the_expected_scores_only_and_flag_low_mass() -> None:
    samples = [_scored(i, float(i), float(i)) for i in range(5)]  # expected == label; parsed constant 3.0
    m = expected_metrics(samples)
    assert m["spearman_expected"] == pytest.approx(100.0) and m["mse_expected"] == pytest.approx(0.0)
    assert m["n_expected"] == 5 and m["expected_missing"] == 0 and "expected_note" not in m
    low = expected_metrics([_scored(i, float(i), float(i), mass=0.1) for i in range(5)])
    assert "10.0%" in low["expected_note"]
    assert expected_metrics([_scored(0, None, 1.0)]) == {}  # parsed-only run: no expected keys at all


def test_expected_metrics_values_against_numpy_and_scipy() -> None:
    from scipy import stats as sps

    expected, labels = [1.5, 4.0, 2.0, 5.0, 3.5], [1.0, 2.0, 4.0, 5.0, 3.0]
    samples = [_scored(i, e, lab, mass=0.2 * (i + 1)) for i, (e, lab) in enumerate(zip(expected, labels, strict=True))]
    m = expected_metrics(samples)
    assert m["mse_expected"] == pytest.approx(np.mean((np.array(expected) - np.array(labels)) ** 2)) == 1.7
    assert m["spearman_expected"] == pytest.approx(100 * sps.spearmanr(expected, labels)[0])
    assert m["pearson_expected"] == pytest.approx(100 * sps.pearsonr(expected, labels)[0])
    assert m["expected_mass_mean"] == pytest.approx(0.6)


def test_an_undefined_or_small_expected_correlation_says_why() -> None:
    # Gemma-3-270M's first token put its only score-token mass on "1" for every item: expected 1.0 throughout,
    # Spearman undefined, and the metrics line said "spearman_expected=None" with no reason (issue 42).
    constant = expected_metrics([_scored(i, 1.0, float(i % 5), mass=0.02) for i in range(40)])
    assert constant["spearman_expected"] is None and constant["pearson_expected"] is None
    assert constant["spearman_expected_note"] == "constant predictions: all 40 equal to 1.0"
    assert constant["pearson_expected_note"] == constant["spearman_expected_note"]
    assert metrics_line(constant, EXPECTED) == (
        "spearman_expected=None†  pearson_expected=None†  expected_mass_mean=0.02  "
        "(† constant predictions: all 40 equal to 1.0)"
    )
    small = expected_metrics([_scored(i, float(i % 5), float(i % 3)) for i in range(10)])
    assert small["spearman_expected_note"] == "n=10" and small["spearman_expected"] is not None
    wide = expected_metrics([_scored(i, float(i % 5), float(i % 3)) for i in range(30)])
    assert "spearman_expected_note" not in wide and "pearson_expected_note" not in wide


def test_only_answered_samples_count_and_the_low_mass_note_starts_below_half() -> None:
    answered = [_scored(i, float(i % 5), float(i % 5 + 1), mass=0.5) for i in range(4)]
    unanswered = dataclasses.replace(_scored(9, 2.0, 1.0), output=None)  # a dry-run line: no answer yet
    failed = dataclasses.replace(_scored(8, 2.0, 1.0), error="HTTP 500")
    m = expected_metrics([*answered, unanswered, failed])
    assert (m["n_expected"], m["expected_missing"], m["expected_mass_mean"]) == (4, 0, 0.5)
    assert "expected_note" not in m  # exactly 0.5 is not low
    assert "expected_note" in expected_metrics([_scored(0, 1.0, 1.0, mass=0.49), _scored(1, 2.0, 2.0, mass=0.5)])
    # mass unknown (a server that returned no log-probabilities) is left out of the mean; mass 0 (the model put
    # its top-k mass elsewhere) counts in it
    no_logprobs = dataclasses.replace(_scored(5, 2.0, 2.0), expected_mass=None)
    assert expected_metrics([no_logprobs, _scored(6, 3.0, 3.0, mass=0.8)])["expected_mass_mean"] == pytest.approx(0.8)
    zero = dataclasses.replace(_scored(5, 2.0, 2.0), expected_mass=0.0)
    assert expected_metrics([zero, _scored(6, 3.0, 3.0, mass=0.8)])["expected_mass_mean"] == pytest.approx(0.4)
    unlabelled = expected_metrics([dataclasses.replace(s, label=None) for s in answered])
    assert unlabelled["n_expected"] == 4 and "spearman_expected" not in unlabelled


# --- vllm: SamplingParams(logprobs=...) and the first position's Logprob objects (stand-in engine) ------------


class Params:
    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs


class LogprobLLM:
    """Answers like vLLM with logprobs: one {token id: Logprob} per generated position."""

    def __init__(self, **engine_args: Any) -> None:
        self.params: Any = None

    def generate(self, prompts: list[str], params: Any, use_tqdm: bool = True) -> list[SimpleNamespace]:
        self.params = params
        first = {
            7: SimpleNamespace(logprob=math.log(0.6), decoded_token="4"),
            8: SimpleNamespace(logprob=math.log(0.3), decoded_token=" 2"),
            9: SimpleNamespace(logprob=math.log(0.1), decoded_token="The"),
        }
        second = {5: SimpleNamespace(logprob=0.0, decoded_token=".")}
        sample = SimpleNamespace(text="4.", token_ids=[7, 5], logprobs=[first, second])
        return [SimpleNamespace(prompt_token_ids=[1, 2], outputs=[sample]) for _ in prompts]


def test_vllm_asks_for_logprobs_and_maps_the_first_position() -> None:
    b = VllmBackend("org/m", LocalOptions(), llm_factory=LogprobLLM, sampling_params=Params, expected=True)

    async def run() -> list[Completion]:
        return [c async for c in b.complete([Request("a", "x")])]

    (c,) = asyncio.run(run())
    assert b.engine().params.kwargs["logprobs"] == SCORE_LOGPROBS
    assert c.score_probs == pytest.approx({"4": 0.6, "2": 0.3})
    assert expected_score(c.score_probs, CSTS)[0] == pytest.approx((4 * 0.6 + 2 * 0.3) / 0.9)  # type: ignore[index]
    assert "score_probs" in b.describe()
    plain = VllmBackend("org/m", LocalOptions(), llm_factory=LogprobLLM, sampling_params=Params)
    assert "score_probs" not in plain.describe()  # parsed runs keep their cache keys


def test_cache_keeps_score_probs_and_reads_files_from_before_them(tmp_path: Path) -> None:
    old = tmp_path / "old.sqlite"
    db = sqlite3.connect(old)
    db.execute(
        "CREATE TABLE responses (key TEXT PRIMARY KEY, text TEXT NOT NULL, input_tokens INTEGER NOT NULL,"
        " output_tokens INTEGER NOT NULL, backend TEXT NOT NULL, model TEXT NOT NULL, created REAL NOT NULL)"
    )
    db.execute("INSERT INTO responses VALUES ('k0', '3', 5, 1, 'hf', 'm', 0)")
    db.commit()
    db.close()
    cache = ResponseCache(old)
    assert cache.get("k0", "q").text == "3" and cache.get("k0", "q").score_probs is None  # type: ignore[union-attr]
    cache.put("k1", Completion("q", "4", usage=Usage(5, 1), score_probs={"4": 0.7, "3": 0.1}), "hf", "m")
    got = cache.get("k1", "q")
    assert got is not None and got.cached and got.score_probs == pytest.approx({"4": 0.7, "3": 0.1})


@pytest.mark.parametrize(
    ("args", "name"),
    [
        (["--model", "claude-sonnet-4-6"], "anthropic"),
        (["--model", "overlap"], "offline"),
    ],
)
def test_expected_scoring_is_refused_in_one_line_without_logprobs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, args: list[str], name: str
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    rc = main([*args, "--dataset", "stsb", "--scoring", "expected", "--results-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1
    assert f"the {name} backend does not give" in err
    assert list(tmp_path.iterdir()) == []
