"""Whether a run's model thinks before it answers, and with what budget, per backend; pure, without an SDK, so that
--dry-run and --max-cost ask the same rule as the backends that send (README "Reasoning models"). Each backend's
rule is its `thinking` in harness/calling/backends BACKENDS:

- openai-names (openai), OpenAI's own model names: reasoning models by name (openai_names.py); one cap,
  `max_completion_tokens` = --reasoning-tokens, holds the hidden reasoning and the answer; --reasoning-effort where
  given.
- when-asked (anthropic): extended thinking only when asked (--reasoning yes): `thinking.budget_tokens` =
  --reasoning-tokens, `max_tokens` = that plus the answer's budget.
- by-name (vllm, hf; openai at an OpenAI-compatible server), open models: by name (THINKING_NAMES) when a chat
  template is applied (a raw prompt has no template to switch thinking on), else as --reasoning says. The total
  budget is --reasoning-tokens plus the answer's; the chat template's switch (Qwen3's `enable_thinking`) is passed
  as set.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from harness.calling.backends.openai_names import default_chat, is_reasoning_model

Rule = Literal["openai-names", "when-asked", "by-name"]  # a backend's rule, above: its line's `thinking`

# Open reasoning models by name: Qwen3 (hybrid: thinks unless switched off), QwQ, DeepSeek-R1 and its
# distillations, gpt-oss, Magistral, Phi-4-reasoning, OpenThinker, Sky-T1, EXAONE Deep, "...-Thinking" models.
THINKING_NAMES = re.compile(
    r"qwen3|qwq|deepseek-r1|(?:^|[-_/])r1(?:$|[-_])|gpt-oss|magistral|phi-4(?:-mini)?-(?:flash-)?reasoning"
    r"|openthinker|sky-t1|exaone-deep|thinking",
    re.I,
)
NOT_THINKING = re.compile(r"instruct-2507|-base(?:$|[-_])", re.I)  # Qwen3-*-Instruct-2507 and base models never think


@dataclass(frozen=True)
class Thinking:
    """A run's reasoning settings as one backend sends them."""

    on: bool
    budget: int  # thinking tokens: --reasoning-tokens
    switch: bool | None = None  # the chat template's enable_thinking; None: not passed
    combined: bool = False  # OpenAI: one cap holds thought and answer (max_completion_tokens = budget)

    def max_tokens(self, answer_tokens: int) -> int:
        """The most output tokens a request may produce (and be billed for)."""
        if not self.on:
            return answer_tokens
        return self.budget if self.combined else self.budget + answer_tokens


NEVER = Thinking(False, 0)  # a backend (or model) that never thinks: its output is the answer alone


def is_open_reasoning_model(model: str) -> bool:
    """Whether an open model's name says it thinks (Qwen3, DeepSeek-R1, gpt-oss, QwQ ...)."""
    return bool(THINKING_NAMES.search(model)) and not NOT_THINKING.search(model)


def thinking_for(
    style: Rule | None, model: str, reasoning: bool | None, budget: int, chat: bool, base_urls: Sequence[str] = ()
) -> Thinking:
    """The run's reasoning settings on a backend whose line of BACKENDS says `style` (its `thinking`): `reasoning`
    is --reasoning (None: auto, by name)."""
    if style == "openai-names" and default_chat(model, base_urls):  # hosted OpenAI, or OpenAI's names at a gateway
        return Thinking(is_reasoning_model(model) if reasoning is None else reasoning, budget, combined=True)
    if style == "when-asked":
        return Thinking(bool(reasoning), budget)  # Claude thinks only when asked to
    if style in ("by-name", "openai-names"):
        detected = chat and is_open_reasoning_model(model)
        on = detected if reasoning is None else reasoning
        switch = on if chat and (reasoning is not None or detected) else None
        return Thinking(on, budget, switch)
    return Thinking(False, budget)  # offline baselines


def thinking_record(thinking: Thinking) -> dict[str, object]:
    """What a local engine's describe() adds for a reasoning run (nothing otherwise: a plain run's record, and so
    its cache key, stay as they were)."""
    if not thinking.on and thinking.switch is None:
        return {}
    record: dict[str, object] = {"reasoning_model": thinking.on}
    if thinking.on:
        record["reasoning_tokens"] = thinking.budget
        record["note"] = "max_tokens = reasoning_tokens + the answer's; the paper's 20-token budget is not applicable"
    if thinking.switch is not None:
        record["chat_template_kwargs"] = {"enable_thinking": thinking.switch}
    return record
