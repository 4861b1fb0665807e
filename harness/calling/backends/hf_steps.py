"""The hf backend's small steps around transformers' `generate` (harness/calling/backends/hf.py): what a loaded
model holds, which requests it refuses, how a batch is padded, the --constrain rule, where an answer ends and why,
the score-token probabilities of --scoring expected, the chunked prefill and the stopping criterion that let Ctrl-C
and SIGTERM end a batch in flight. Plain functions, no torch import of their own (the backend passes its module in)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from harness.scoring.expected import score_token_value
from harness.scoring.reasoning import answer_start
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


# Prompt tokens (all rows together) read per forward pass before generation, on the CPU: a stop waits for at most
# one such pass, where generate's own prefill of 8 prompts of 99 shots each was one pass of minutes (issue 45).
PREFILL_TOKENS = 256


def prefill(torch: Any, tf: Any, lm: Loaded, input_ids: Any, attention_mask: Any, stop: threading.Event) -> Any:
    """The key/value cache of every prompt token but the last, read a chunk at a time, with `stop` checked between
    chunks; generate then reads the last token and goes on from the cache. None where one pass is short anyway
    (a GPU; prompts within one chunk) and for encoder-decoder models (their encoder reads the prompt in one pass).
    The same attention over the same tokens, in other slices: answers may differ from one pass's only as a different
    batch size's may, in the last bits of the floating point."""
    rows, width = input_ids.shape
    chunk = max(16, PREFILL_TOKENS // rows)
    if lm.encoder_decoder or lm.device.type != "cpu" or width - 1 <= chunk:
        return None
    try:
        cache = tf.DynamicCache(config=lm.model.config)
    except TypeError:  # transformers before the cache took the model's config
        cache = tf.DynamicCache()
    # Left padding: positions count real tokens only, as generate counts them (prepare_inputs_for_generation).
    positions = attention_mask.long().cumsum(-1) - 1
    positions.masked_fill_(attention_mask == 0, 1)
    for start in range(0, width - 1, chunk):
        if stop.is_set():
            return None
        end = min(start + chunk, width - 1)
        lm.model(
            input_ids=input_ids[:, start:end],
            attention_mask=attention_mask[:, :end],
            position_ids=positions[:, start:end],
            **{cache_argument(lm.model): cache},
            cache_position=torch.arange(start, end, device=input_ids.device),
            use_cache=True,
            logits_to_keep=1,  # the prompt's logits are not needed: only the cache
        )
    return cache


def cache_argument(model: Any) -> str:
    """The name a model's forward and generate take a key/value cache by: `cache` in transformers 5.x, where
    `past_key_values` is deprecated; `past_key_values` before."""
    import inspect

    return "cache" if "cache" in inspect.signature(type(model).forward).parameters else "past_key_values"


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


def padded(batch: list[Item], width: int, pad: int, encoder_decoder: bool) -> tuple[list[list[int]], list[list[int]]]:
    """(input ids, attention masks) of a batch `width` tokens wide: padded on the right for encoder-decoder models,
    on the left for decoder-only ones, so that every prompt ends where generation starts."""
    rows, masks = [], []
    for it in batch:
        fill = width - len(it.ids)
        if encoder_decoder:
            rows.append(it.ids + [pad] * fill)
            masks.append([1] * len(it.ids) + [0] * fill)
        else:
            rows.append([pad] * fill + it.ids)
            masks.append([0] * fill + [1] * len(it.ids))
    return rows, masks


def allowed(lm: Loaded, width: int, constrain: tuple[int, ...]) -> Any:
    """--constrain: transformers' prefix_allowed_tokens_fn. The first new token is one of the scale's integer
    tokens ("4", " 4", ...), the next the end of sequence: the reply is exactly one score."""
    scale = {str(v) for v in constrain}
    first, eos = sorted(i for i, v in lm.score_tokens.items() if v in scale), sorted(lm.eos_ids)
    start = 1 if lm.encoder_decoder else width  # decoder input: its start token / the (left-padded) prompt
    return lambda batch_id, input_ids: first if input_ids.shape[-1] == start else eos


def first_position_probs(torch: Any, logits: Any, lm: Loaded) -> list[dict[str, float]]:
    """Per row: {integer: probability} at the first output position, over the whole vocabulary (float32)."""
    probs = torch.softmax(logits.float(), dim=-1)
    ids = [i for i in lm.score_tokens if i < probs.shape[-1]]
    picked = probs[:, ids].tolist() if ids else [[] for _ in range(len(probs))]
    rows = []
    for row in picked:
        sums: dict[str, float] = {}
        for token_id, p in zip(ids, row, strict=True):
            score = lm.score_tokens[token_id]
            sums[score] = sums.get(score, 0.0) + p
        rows.append(sums)
    return rows


def answer_probs(
    torch: Any, logits: Any, row: int, kept: list[int], lm: Loaded, first: dict[str, float]
) -> dict[str, float]:
    """--scoring expected: the probabilities at the answer's first position, never a thought's (the first
    position unless the reply thinks first; {} where its answer's first token cannot be told). The tokens are
    decoded one by one with their special ones, so a thought's delimiters show even where they are special."""
    pieces = [lm.tokenizer.decode([t], skip_special_tokens=False) for t in kept]
    at = answer_start(pieces, "".join(pieces))
    if at == 0:
        return first  # no thought: the batch's first position, already computed
    if at is None or at >= len(logits):
        return {}
    return first_position_probs(torch, logits[at][row : row + 1], lm)[0]


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
