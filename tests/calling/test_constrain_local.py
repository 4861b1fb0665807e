"""--constrain on the local engines: vLLM's structured outputs (parameters built for a stand-in engine, as vLLM
needs a GPU) and hf's first-token restriction on a tiny random GPT-2 run by real transformers."""

from __future__ import annotations

import asyncio
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from harness.calling.backends.vllm import VllmBackend, structured_choice
from harness.config.settings import LocalOptions
from harness.scoring.constrained import parse_constrained
from harness.types import Completion, Request
from tests.calling.test_backend_vllm import StandInLLM, StandInParams


def complete(backend: Any, requests: list[Request]) -> dict[str, Completion]:
    async def collect() -> list[Completion]:
        return [c async for c in backend.complete(requests)]

    return {c.request_id: c for c in asyncio.run(collect())}


def test_vllm_sampling_params_carry_a_choice_over_the_scale() -> None:
    seen: list[list[str]] = []

    def choice(values: list[str]) -> dict[str, Any]:
        seen.append(values)
        return {"structured_outputs": ("choice", tuple(values))}

    b = VllmBackend(
        "org/m", LocalOptions(), llm_factory=StandInLLM, sampling_params=StandInParams,
        constrain=(1, 2, 3, 4, 5), choice_params=choice,
    )  # fmt: skip
    complete(b, [Request("0", "p"), Request("1", "q")])
    params = b.engine().calls[0][2]
    assert params.kwargs["structured_outputs"] == ("choice", ("1", "2", "3", "4", "5"))
    assert params.kwargs["temperature"] == 0.0 and seen == [["1", "2", "3", "4", "5"]]
    assert b.describe()["constrain"] == {"mechanism": "structured outputs: choice", "choice": ["1", "2", "3", "4", "5"]}
    plain = VllmBackend("org/m", LocalOptions(), llm_factory=StandInLLM, sampling_params=StandInParams)
    assert "constrain" not in plain.describe()  # unconstrained runs keep their cache keys
    complete(plain, [Request("0", "p")])
    assert "structured_outputs" not in plain.engine().calls[0][2].kwargs


class _Params:
    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs


@pytest.mark.parametrize(
    ("names", "keyword"),
    [
        ({"StructuredOutputsParams", "GuidedDecodingParams"}, "structured_outputs"),
        ({"GuidedDecodingParams"}, "guided_decoding"),
    ],
)
def test_vllm_choice_uses_structured_outputs_or_before_the_rename_guided_decoding(
    names: set[str], keyword: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """vLLM 0.10.2 renamed GuidedDecodingParams/guided_decoding to StructuredOutputsParams/structured_outputs."""
    module = types.ModuleType("vllm.sampling_params")
    for name in names:
        setattr(module, name, _Params)
    monkeypatch.setitem(sys.modules, "vllm", types.ModuleType("vllm"))
    monkeypatch.setitem(sys.modules, "vllm.sampling_params", module)
    (got,) = structured_choice(["0", "1"]).items()
    assert got[0] == keyword and got[1].kwargs == {"choice": ["0", "1"]}


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("torch", reason='the hf extra is not installed: pip install -e ".[hf]"')
    pytest.importorskip("transformers", reason='the hf extra is not installed: pip install -e ".[hf]"')
    from tests.tiny_models import save_tiny_gpt2, shared

    return shared(save_tiny_gpt2, tmp_path_factory)


def test_hf_constrained_reply_is_the_likeliest_scale_token_then_eos(gpt2_dir: Path) -> None:
    """The reply is one token of the scale: the first position's most likely among them (a plain forward pass,
    no processors), then the end of sequence; batched with left padding as one at a time."""
    import torch

    from harness.calling.backends.hf import HFBackend

    requests = [Request(str(i), f"Input: Sentence 1: a red fox{' runs' * i}. Output:") for i in range(6)]
    scale = (1, 2, 3, 4, 5)
    backend = HFBackend(str(gpt2_dir), LocalOptions(batch_size=3), constrain=scale)
    done = complete(backend, requests)
    lm = backend.load()
    allowed = [i for i, v in lm.score_tokens.items() if int(v) in scale]
    assert allowed  # the tiny tokenizer has digit tokens
    for r in requests:
        ids = lm.tokenizer(r.prompt, return_tensors="pt")["input_ids"].to(lm.device)  # cuda:0 on a GPU machine
        with torch.inference_mode():
            logits = lm.model(input_ids=ids).logits[0, -1]
        best = allowed[int(torch.argmax(logits[allowed]))]
        c = done[r.id]
        assert c.text == lm.tokenizer.decode([best]) and parse_constrained(c.text) in scale
        assert c.usage.output_tokens == 2  # the score token and the EOS the restriction forces
    free = complete(HFBackend(str(gpt2_dir), LocalOptions(batch_size=3)), requests)
    assert any(parse_constrained(c.text) is None for c in free.values())  # without it, the random model rambles
    assert backend.describe()["constrain"]["scale"] == list(scale)  # type: ignore[index]
