"""harness/calling/backends/description.py: what a backend's line makes of a run's settings, and a backend built from
the line it is handed (not from the table, which names its module: tests/test_layers.py)."""

from __future__ import annotations

import dataclasses

import pytest

from harness.calling.backends import BACKENDS
from harness.calling.backends.description import Description
from harness.calling.backends.hf import from_config as hf_from_config
from harness.calling.backends.openai import OpenAIBackend
from harness.config.settings import ApiOptions, RunConfig
from harness.types import HarnessError

URL = ("http://127.0.0.1:9/v1",)


@pytest.mark.parametrize(
    ("chat", "model", "base_urls", "given", "expected"),
    [
        ("only", "m", URL, None, True),  # chat always
        ("openai-names", "gpt-4o", (), None, True),  # at the provider
        ("openai-names", "gpt-4o", URL, None, True),  # OpenAI's names stay chat behind a gateway
        ("openai-names", "my-llama", URL, None, False),  # raw text to other models at a server
        ("template", "m", (), None, False),  # raw unless --chat
        ("none", "m", (), None, False),
        ("template", "m", (), True, True),  # --chat / --no-chat win over the line's default
        ("openai-names", "gpt-4o", (), False, False),
    ],
)
def test_a_lines_chat_mode(
    chat: str, model: str, base_urls: tuple[str, ...], given: bool | None, expected: bool
) -> None:
    line = Description(None, "api", chat=chat)  # type: ignore[arg-type]
    config = RunConfig(model=model, chat=given, api=ApiOptions(base_urls=base_urls))
    assert line.chat_mode(config) is expected


@pytest.mark.parametrize(
    ("thinking", "model", "chat", "reasoning", "on", "budget_of_20"),
    [
        ("openai-names", "o3-mini", None, None, True, 900),  # OpenAI's reasoning name: one cap for thought and answer
        ("openai-names", "gpt-4o", None, None, False, 20),
        ("when-asked", "claude-x", None, None, False, 20),  # Claude thinks only when asked
        ("when-asked", "claude-x", None, True, True, 920),
        ("by-name", "qwen3-8b", True, None, True, 920),  # an open reasoning name, with a chat template
        ("by-name", "qwen3-8b", None, None, False, 20),  # raw text: no template to switch thinking on
        (None, "qwen3-8b", True, True, False, 20),  # a line without a rule never thinks
    ],
)
def test_a_lines_reasoning(
    thinking: str | None, model: str, chat: bool | None, reasoning: bool | None, on: bool, budget_of_20: int
) -> None:
    line = Description(None, "engine", chat="template", thinking=thinking)  # type: ignore[arg-type]
    config = RunConfig(model=model, chat=chat, api=ApiOptions(reasoning=reasoning, reasoning_tokens=900))
    think = line.reasoning(config)
    assert (think.on, think.max_tokens(20)) == (on, budget_of_20)


def test_a_backend_is_built_from_the_line_it_is_handed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The key comes from the handed line's key_env, not from the table's line of the same backend."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OTHER_KEY", "sk-other-0123456789")
    line = dataclasses.replace(BACKENDS["openai"], key_env="OTHER_KEY")
    built = OpenAIBackend.from_config(RunConfig(model="gpt-4o"), line)
    assert "sk-other-0123456789" in built.secrets
    with pytest.raises(HarnessError, match="^OPENAI_API_KEY is not set"):
        OpenAIBackend.from_config(RunConfig(model="gpt-4o"), BACKENDS["openai"])


def test_an_api_whose_line_and_class_disagree_on_reasoning_is_not_built(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789")
    line = dataclasses.replace(BACKENDS["openai"], thinking="by-name")
    with pytest.raises(AssertionError, match="thinking_rule"):
        OpenAIBackend.from_config(RunConfig(model="o3-mini"), line)


def test_an_engine_takes_its_chat_mode_and_reasoning_from_its_line() -> None:
    """hf's builder reads chat and reasoning from the line it is handed (built, not loaded: no weights are read)."""
    config = RunConfig(model="Qwen/Qwen3-8B", backend="hf")
    plain = hf_from_config(config, BACKENDS["hf"])
    chat = hf_from_config(config, dataclasses.replace(BACKENDS["hf"], chat="only"))
    assert (plain.chat, plain.thinking.on) == (False, False)
    assert (chat.chat, chat.thinking.on) == (True, True)
