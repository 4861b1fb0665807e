"""Reasoning on the local engines: the chat template's thinking switch through real transformers (a Qwen3-style
template on a tiny GPT-2), the thinking budget as new tokens, finish reasons that tell a cut-off apart; and the
vllm backend's chat_template_kwargs through its stand-in engine (vLLM needs a GPU)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from harness.calling.backends.thinking import Thinking, is_open_reasoning_model, thinking_for
from harness.calling.backends.vllm import VllmBackend
from harness.config.settings import LocalOptions
from harness.types import Completion, Request

# Qwen3's chat template, reduced to the parts that decide the prompt of one user message (Qwen/Qwen3-8B's
# tokenizer_config.json): an empty thought is written into the prompt when enable_thinking is false.
QWEN3_TEMPLATE = (
    "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}"
    "{%- endif %}{%- endif %}"
)


@pytest.mark.parametrize(
    ("model", "thinks"),
    [
        ("Qwen/Qwen3-8B", True),
        ("Qwen/Qwen3-4B-Instruct-2507", False),  # the 2507 instruct models never think
        ("deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B", True),
        ("openai/gpt-oss-20b", True),
        ("Qwen/QwQ-32B", True),
        ("Qwen/Qwen2.5-7B-Instruct", False),
        ("meta-llama/Llama-3.1-8B-Instruct", False),
        ("HuggingFaceTB/SmolLM2-135M-Instruct", False),
    ],
)
def test_open_reasoning_models_are_known_by_name(model: str, thinks: bool) -> None:
    assert is_open_reasoning_model(model) is thinks


def test_auto_detection_needs_a_chat_template_and_explicit_settings_win() -> None:
    assert thinking_for("by-name", "Qwen/Qwen3-8B", None, 512, chat=True) == Thinking(True, 512, True)
    assert thinking_for("by-name", "Qwen/Qwen3-8B", None, 512, chat=False) == Thinking(False, 512, None)  # raw prompt
    assert thinking_for("by-name", "Qwen/Qwen3-8B", False, 512, chat=True) == Thinking(False, 512, False)
    assert thinking_for("when-asked", "claude-sonnet-4-6", None, 2048, chat=True).on is False  # only when asked
    assert thinking_for("openai-names", "o3", None, 900, chat=True).max_tokens(20) == 900  # one cap, answer included
    assert thinking_for("by-name", "m", True, 900, chat=False).max_tokens(20) == 920  # thought + answer


class ThinkingLLM:
    """vllm.LLM's shape: records chat()'s keyword arguments; answers with a thought cut off at the budget."""

    def __init__(self, **engine_args: Any) -> None:
        self.chats: list[dict[str, Any]] = []

    def chat(self, messages: list[Any], sampling_params: Any, use_tqdm: bool = True, **kwargs: Any) -> list[Any]:
        self.chats.append({"params": sampling_params, **kwargs})
        sample = SimpleNamespace(text="<think>\nOkay, 2 dogs", token_ids=[1, 2, 3], finish_reason="length")
        return [SimpleNamespace(prompt_token_ids=[1], outputs=[sample]) for _ in messages]


def test_vllm_passes_the_switch_and_the_total_budget() -> None:
    backend = VllmBackend(
        "Qwen/Qwen3-8B",
        LocalOptions(),
        chat=True,
        llm_factory=ThinkingLLM,
        sampling_params=lambda **kw: kw,
        thinking=Thinking(True, 1000, True),
    )

    async def collect() -> list[Completion]:
        return [c async for c in backend.complete([Request("q", "p")])]

    (done,) = asyncio.run(collect())
    call = backend.engine().chats[0]
    assert call["chat_template_kwargs"] == {"enable_thinking": True} and call["params"]["max_tokens"] == 1020
    assert done.finish_reason == "length" and done.text == "<think>\nOkay, 2 dogs"
    assert backend.describe()["chat_template_kwargs"] == {"enable_thinking": True}
    plain = VllmBackend("m", LocalOptions(), llm_factory=ThinkingLLM, sampling_params=lambda **kw: kw)
    assert "reasoning_model" not in plain.describe()  # a plain run's record (its cache key) is unchanged


@pytest.fixture(scope="module")
def qwen3_style_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("torch", reason='the hf extra is not installed: pip install -e ".[hf]"')
    pytest.importorskip("transformers", reason='the hf extra is not installed: pip install -e ".[hf]"')
    from tests.tiny_models import save_tiny_gpt2

    directory = save_tiny_gpt2(tmp_path_factory.mktemp("qwen3-style"))
    config = json.loads((directory / "tokenizer_config.json").read_text())
    config["chat_template"] = QWEN3_TEMPLATE
    (directory / "tokenizer_config.json").write_text(json.dumps(config))
    return directory


def test_hf_renders_the_templates_thinking_switch(qwen3_style_dir: Path) -> None:
    from harness.calling.backends.hf import HFBackend

    def prompt(switch: bool | None) -> str:
        backend = HFBackend(str(qwen3_style_dir), LocalOptions(), chat=True, thinking=Thinking(True, 4, switch))
        (item,) = backend.tokenize([Request("q", "Rate 1-5.")])
        return str(backend.load().tokenizer.decode(item.ids))

    assert prompt(False).endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert prompt(True).endswith("<|im_start|>assistant\n") and "<think>" not in prompt(True)
    assert prompt(None) == prompt(True)  # no switch passed: the template's default (Qwen3 thinks)


def test_hf_generates_the_thinking_budget_and_says_when_it_ran_out(qwen3_style_dir: Path) -> None:
    from harness.calling.backends.hf import HFBackend

    backend = HFBackend(str(qwen3_style_dir), LocalOptions(), chat=True, thinking=Thinking(True, 6, True))

    async def collect() -> list[Completion]:
        return [c async for c in backend.complete([Request("q", "Rate 1-5.", max_tokens=2)])]

    (done,) = asyncio.run(collect())
    assert done.error is None and done.usage.output_tokens <= 8
    # a random model rarely ends early; when it runs the whole budget, finish_reason says "length"
    assert done.finish_reason == ("length" if done.usage.output_tokens == 8 else "stop")
    assert backend.describe()["reasoning_tokens"] == 6
