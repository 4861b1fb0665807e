"""The vllm backend's request building and output mapping.

vLLM needs a CUDA GPU, so most tests here inject a STAND-IN ENGINE through the backend's seam
(`llm_factory=` and `sampling_params=` in place of `vllm.LLM` and `vllm.SamplingParams`): it records what
the backend hands to vLLM and answers with objects shaped like vLLM's `RequestOutput`. They check our code,
not vLLM. The last test runs the real engine and is skipped unless CUDA and vllm are both present.
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest

from harness.calling.backends.vllm import VllmBackend
from harness.cli.main import main
from harness.config.settings import LocalOptions
from harness.types import Completion, HarnessError, Request


class StandInParams:
    """Records the keyword arguments vllm.SamplingParams would get."""

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs


class StandInLLM:
    """Records every call; answers "<n>.0" for the n-th prompt with RequestOutput-shaped objects."""

    instances: ClassVar[list[StandInLLM]] = []

    def __init__(self, **engine_args: Any) -> None:
        self.engine_args = engine_args
        self.calls: list[tuple[str, list[Any], Any, bool]] = []
        StandInLLM.instances.append(self)

    def _answer(self, n: int) -> list[SimpleNamespace]:
        return [
            SimpleNamespace(
                prompt_token_ids=list(range(10 + i)),
                outputs=[SimpleNamespace(text=f"{i}.0", token_ids=[1, 2, 3])],
            )
            for i in range(n)
        ]

    def generate(self, prompts: list[str], sampling_params: Any, use_tqdm: bool = True) -> list[SimpleNamespace]:
        self.calls.append(("generate", list(prompts), sampling_params, use_tqdm))
        return self._answer(len(prompts))

    def chat(self, messages: list[Any], sampling_params: Any, use_tqdm: bool = True) -> list[SimpleNamespace]:
        self.calls.append(("chat", list(messages), sampling_params, use_tqdm))
        return self._answer(len(messages))


class RefusingLLM(StandInLLM):
    def generate(self, prompts: list[str], sampling_params: Any, use_tqdm: bool = True) -> list[SimpleNamespace]:
        raise ValueError("The decoder prompt (length 9000) is longer than the maximum model length of 4096.\nmore")


def backend(
    options: LocalOptions | None = None, seed: int = 0, llm: type[StandInLLM] = StandInLLM, chat: bool = False
) -> VllmBackend:
    return VllmBackend(
        "org/model", options or LocalOptions(), seed=seed, llm_factory=llm, sampling_params=StandInParams, chat=chat
    )


def complete(b: VllmBackend, requests: Sequence[Request]) -> list[Completion]:
    async def collect() -> list[Completion]:
        return [c async for c in b.complete(requests)]

    return asyncio.run(collect())


REQUESTS = [Request(f"q{i}", f"prompt {i}") for i in range(5)]


def test_all_requests_go_to_vllm_in_one_generate_call_in_order() -> None:
    b = backend()
    complete(b, REQUESTS)
    llm = b.engine()
    assert [(kind, prompts) for kind, prompts, _, _ in llm.calls] == [("generate", [r.prompt for r in REQUESTS])]


def test_sampling_params_are_greedy_20_tokens_seeded() -> None:
    b = backend(seed=7)
    complete(b, REQUESTS)
    params = b.engine().calls[0][2]
    assert isinstance(params, StandInParams)  # one shared object: every request asks the same
    assert params.kwargs == {"temperature": 0.0, "max_tokens": 20, "seed": 7}


def test_requests_that_differ_get_one_sampling_params_each() -> None:
    b = backend()
    complete(b, [Request("a", "x"), Request("b", "y", max_tokens=5)])
    params = b.engine().calls[0][2]
    assert [p.kwargs["max_tokens"] for p in params] == [20, 5]


def test_outputs_map_back_to_request_ids_with_usage() -> None:
    done = complete(backend(), REQUESTS)
    assert [(c.request_id, c.text) for c in done] == [(f"q{i}", f"{i}.0") for i in range(5)]
    assert [(c.usage.input_tokens, c.usage.output_tokens) for c in done] == [(10 + i, 3) for i in range(5)]
    assert all(c.error is None for c in done)


def test_chat_sends_one_user_message_per_request() -> None:
    b = backend(chat=True)
    complete(b, REQUESTS[:2])
    kind, conversations, _, _ = b.engine().calls[0]
    assert kind == "chat"
    assert conversations == [[{"role": "user", "content": "prompt 0"}], [{"role": "user", "content": "prompt 1"}]]


def test_engine_gets_the_run_options_and_is_built_once() -> None:
    StandInLLM.instances.clear()
    options = LocalOptions(dtype="bfloat16", tensor_parallel=2, gpu_memory_utilization=0.8, max_model_len=4096)
    b = backend(options, seed=3)
    complete(b, REQUESTS[:2])
    complete(b, REQUESTS[2:])
    assert len(StandInLLM.instances) == 1
    assert StandInLLM.instances[0].engine_args == {
        "model": "org/model",
        "tensor_parallel_size": 2,
        "dtype": "bfloat16",
        "gpu_memory_utilization": 0.8,
        "max_model_len": 4096,
        "seed": 3,
    }


def test_no_requests_builds_no_engine() -> None:
    StandInLLM.instances.clear()
    assert complete(backend(), []) == []
    assert StandInLLM.instances == []


def test_refused_prompt_fails_in_one_line() -> None:
    with pytest.raises(HarnessError, match=r"vllm refused the requests: The decoder prompt .* 4096\.") as e:
        complete(backend(llm=RefusingLLM), REQUESTS)
    assert "\n" not in str(e.value)


def test_describe_names_seed_dtype_and_chat_but_not_throughput_knobs() -> None:
    d = backend(LocalOptions(dtype="float16", tensor_parallel=4), seed=5, chat=True).describe()
    assert (d["model"], d["dtype"], d["chat_template"], d["seed"]) == ("org/model", "float16", True, 5)
    assert "tensor_parallel" not in d and "gpu_memory_utilization" not in d


def test_missing_vllm_fails_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)  # what `import vllm` meets without the extra
    rc = main(["--backend", "vllm", "--model", "org/model", "--dataset", "stsb", "--results-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and 'pip install -e ".[vllm]"' in err
    assert list(tmp_path.iterdir()) == []


def _cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


requires_vllm_gpu = pytest.mark.skipif(
    importlib.util.find_spec("vllm") is None or not _cuda(), reason="needs vllm and a CUDA GPU"
)


@requires_vllm_gpu
def test_real_vllm_engine_answers_every_request(tmp_path: Path) -> None:
    from tests.tiny_models import save_tiny_gpt2

    model_dir = save_tiny_gpt2(tmp_path / "tiny-gpt2")
    b = VllmBackend(str(model_dir), LocalOptions(gpu_memory_utilization=0.3, max_model_len=1024), seed=0)
    done = complete(b, REQUESTS)
    assert sorted(c.request_id for c in done) == sorted(r.id for r in REQUESTS)
    assert all(c.error is None and c.text is not None and 1 <= c.usage.output_tokens <= 20 for c in done)
