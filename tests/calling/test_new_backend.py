"""A provider is one module and one entry in BACKENDS (README "Extending the harness"): a toy provider,
tests/calling/toy_backend.py, gets its table entry here and nowhere else, and is then validated, priced,
recorded and run end to end through the Python API like a shipped one."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from harness import ApiOptions, HarnessError, evaluate
from harness.calling.backends import BACKENDS, Description
from harness.variants.validate import validate_run

# The one line a new provider adds to harness/calling/backends/__init__.py BACKENDS.
TOY = Description(
    "tests.calling.toy_backend", "api", chat="only", stop=True, key_env="TOY_API_KEY", packages=("pytest",),
    prefixes=("toy-",),
)  # fmt: skip
KEY = "toy-key-0123456789"
# What docs/extending.md "A new backend" must name (tests/docs/test_extending.py checks it does).
DOCUMENTED = ("harness/calling/backends/<name>.py", "harness/calling/backends/__init__.py")


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(BACKENDS, "toy", TOY)
    monkeypatch.setenv("TOY_API_KEY", KEY)


def _prices(tmp_path: Path) -> Path:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"models": {"toy-1": {"input": 2.0, "output": 10.0}}}), encoding="utf-8")
    return path


def _lines(run_dir: Path, name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / name).read_text(encoding="utf-8").splitlines()]


def test_a_new_backend_runs_end_to_end_priced_and_recorded(toy: None, tmp_path: Path) -> None:
    api = ApiOptions(prices=_prices(tmp_path), max_cost=1.0)
    common: dict[str, Any] = {"dataset": "stsb", "limit": 12, "progress": False, "results_dir": tmp_path / "r"}
    result = evaluate(model="toy-1", stop=("\n",), api=api, **common)  # the name implies the backend
    baseline = evaluate(model="overlap", **common)
    samples, expected = _lines(result.run_dir, "samples.jsonl"), _lines(baseline.run_dir, "samples.jsonl")
    assert [s["prediction"] for s in samples] == [s["prediction"] for s in expected]  # the same word overlap
    assert result.metrics["spearman"] == baseline.metrics["spearman"]

    config = json.loads((result.run_dir / "config.json").read_text(encoding="utf-8"))
    assert config["backend"] == "toy"
    assert config["backend_params"] == {"toy": "word overlap", "chat": True, "stop": ["\n"]}  # chat: "only"
    assert config["packages"]["pytest"] == pytest.__version__  # its provenance entry
    assert {"openai", "anthropic", "transformers"} < set(config["packages"])  # and the shipped backends' still

    tokens_in = sum(s["usage"]["input_tokens"] for s in samples)
    tokens_out = sum(s["usage"]["output_tokens"] for s in samples)
    assert (tokens_in, tokens_out) == (result.metrics["usage"]["input_tokens"], 12)
    cost = (tokens_in * 2.0 + tokens_out * 10.0) / 1e6  # the user's price file, applied by the harness
    assert result.metrics["usage"]["cost_usd"] == round(cost, 6)
    assert result.metrics["dispatch"]["spent_usd"] == pytest.approx(cost)
    assert result.metrics["usage"]["price"]["entry"] == "toy-1"

    dry = evaluate(model="toy-1", api=api, dry_run=True, **common | {"results_dir": tmp_path / "dry"})
    assert "+7 per request for the chat message" in dry.metrics["token_count"]  # remote, chat: "only"
    worst = (dry.metrics["prompt_tokens"] * 2.0 + dry.metrics["max_output_tokens"] * 10.0) / 1e6
    assert dry.metrics["price"]["entry"] == "toy-1" and dry.metrics["max_cost_usd"] == round(worst, 4)


@pytest.mark.parametrize(
    ("entry", "changes", "message"),
    [
        ({}, {"api": ApiOptions(max_cost=1.0)}, "^--max-cost needs a price for 'toy-1'"),
        ({}, {"scoring": "expected"}, "which the toy backend does not give; use one of: hf, openai, vllm$"),
        ({}, {"chat": False}, "^--no-chat: toy models are chat-only"),
        ({"stop": False}, {"stop": ("\n",)}, r"^--stop: the toy backend does not send stop sequences \(only openai"),
        ({"prefixes": ()}, {}, "^unknown model 'toy-1'"),
        ({"kind": "embedder", "module": None}, {}, "^--backend toy only embeds text"),
    ],
)
def test_validation_reads_the_new_entry(
    monkeypatch: pytest.MonkeyPatch, entry: dict[str, Any], changes: dict[str, Any], message: str, tmp_path: Path
) -> None:
    monkeypatch.setitem(BACKENDS, "toy", dataclasses.replace(TOY, **entry))
    with pytest.raises(HarnessError, match=message):
        evaluate(model="toy-1", dataset="stsb", results_dir=tmp_path, dry_run=True, **changes)
    assert not tmp_path.exists() or list(tmp_path.iterdir()) == []  # refused before anything was written


def test_the_entry_decides_what_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same settings pass once the entry says the backend can honour them."""
    from harness.config.settings import RunConfig

    config = RunConfig(model="toy-1", dataset="stsb", scoring="expected")
    monkeypatch.setitem(BACKENDS, "toy", TOY)
    with pytest.raises(HarnessError, match="toy backend does not give"):
        validate_run(config)
    monkeypatch.setitem(BACKENDS, "toy", dataclasses.replace(TOY, logprobs=True))
    validate_run(config)


def test_its_api_key_comes_from_its_entry(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(BACKENDS, "toy", TOY)
    monkeypatch.delenv("TOY_API_KEY", raising=False)
    with pytest.raises(HarnessError, match="^TOY_API_KEY is not set: the toy backend needs an API key$"):
        evaluate(model="toy-1", dataset="stsb", results_dir=tmp_path, progress=False)
    assert not tmp_path.exists() or list(tmp_path.iterdir()) == []
