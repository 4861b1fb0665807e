"""What OpenAI's model names mean for a request, without the SDK: chat or raw text, reasoning model or not, and
the output budget a request is billed up to. --dry-run and sweep planning ask these of a model they never call,
so they live here rather than in openai.py, which imports the openai SDK (about a second of CPU)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from harness.types import Request

# o1, o3-mini, o4-mini, gpt-5, gpt-5-mini ... but not gpt-5-chat-latest, which is a plain chat model.
_REASONING = re.compile(r"^(o\d|gpt-5)(?!.*-chat)")
_OPENAI_CHAT_NAMES = re.compile(r"^(gpt-|chatgpt|o\d)")
DEFAULT_REASONING_TOKENS = 2048


def default_chat(model: str, base_urls: Sequence[str]) -> bool:
    """Chat for hosted OpenAI and for OpenAI's own model names behind a gateway (chat-only models); raw text
    for any other model on an OpenAI-compatible server, as the paper sent open models."""
    return not base_urls or bool(_OPENAI_CHAT_NAMES.match(model))


def is_reasoning_model(model: str) -> bool:
    """Whether the name is one of OpenAI's reasoning models (no temperature, reasoning billed as output)."""
    return bool(_REASONING.match(model))


def output_budget(request: Request, reasoning: bool, reasoning_tokens: int) -> int:
    """The most output tokens a request can be billed for: a reasoning model bills its hidden reasoning as
    output, up to the max_completion_tokens we send. The backend's rule, also asked by --dry-run, which
    builds no backend (harness/calling/backends/__init__.py `output_budget`)."""
    return reasoning_tokens if reasoning else request.max_tokens
