"""The hf backend's small steps around transformers' `generate` (harness/calling/backends/hf.py): what a loaded
model holds, which requests it refuses, where an answer ends and why, and the stopping criterion that lets Ctrl-C
end a batch in flight. Plain functions, no torch import of their own."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from harness.scoring.expected import score_token_value
from harness.types import Request


@dataclass(frozen=True)
class Item:
    request: Request
    ids: list[int]


@dataclass(frozen=True)
class Loaded:
    model: Any
    tokenizer: Any
    device: Any
    encoder_decoder: bool
    max_positions: int | None  # decoder-only context length; None: no fixed limit (T5's relative positions)
    eos_ids: frozenset[int]
    score_tokens: dict[int, str]  # token id -> the integer it stands for ("4", " 4", "▁4" -> "4"); expected only


class Interrupted:
    """A transformers stopping criterion, called after every token: all rows are done once `stop` is set (Ctrl-C), so
    the batch in flight ends after its current token; complete() drops its cut-short answers (never cached)."""

    def __init__(self, stop: threading.Event, torch: Any) -> None:
        self.stop, self.torch = stop, torch

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        return self.torch.full((len(input_ids),), self.stop.is_set(), dtype=self.torch.bool, device=input_ids.device)


def score_tokens(tokenizer: Any) -> dict[int, str]:
    """Every vocabulary entry that decodes to an integer 0-10 (any surrounding whitespace), by id."""
    found = {}
    for token_id in range(len(tokenizer)):
        value = score_token_value(tokenizer.decode([token_id]))
        if value is not None:
            found[token_id] = str(value)
    return found


def refusal(item: Item, lm: Loaded, budget: int) -> str | None:
    """Why a request cannot be run (its prompt plus answer exceed a decoder-only model's context), or None."""
    if item.request.temperature != 0:
        return f"the hf backend decodes greedily only (temperature 0), got {item.request.temperature}"
    if lm.max_positions is not None and len(item.ids) + budget > lm.max_positions:
        return (
            f"prompt of {len(item.ids)} tokens plus {budget} new ones exceeds the model's context of {lm.max_positions}"
        )
    return None


def until_eos(tokens: list[int], eos_ids: frozenset[int]) -> list[int]:
    """Tokens up to and including the first end-of-sequence (what follows is padding)."""
    for i, t in enumerate(tokens):
        if t in eos_ids:
            return tokens[: i + 1]
    return tokens


def finish_reason(kept: list[int], max_tokens: int, eos_ids: frozenset[int]) -> str:
    """As the API backends report it: "length" when the reply used its whole budget without ending (the parser's
    `cut-off`), else "stop" (an end-of-sequence token, or a stop of the model's generation_config)."""
    ended = bool(kept) and kept[-1] in eos_ids
    return "length" if len(kept) >= max_tokens and not ended else "stop"


def torch_dtype(torch: Any, name: str) -> Any:
    return "auto" if name == "auto" else getattr(torch, name)


def has_accelerate() -> bool:
    import importlib.util

    return importlib.util.find_spec("accelerate") is not None
