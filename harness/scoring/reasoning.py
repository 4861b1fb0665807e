"""The answer is what comes after the thinking: a reply split into its thought and its answer. Pure, no I/O.

A reasoning model's thought reaches us in one of three ways, and the paper's first-number rule (parsing.py) must
read only the answer in each:
- a separate field: a server's `reasoning_content` / `reasoning` (vLLM, SGLang, llama.cpp's server), Anthropic's
  `thinking` blocks. The backend keeps it in Completion.reasoning; the text is the answer already.
- hidden: OpenAI's reasoning models bill reasoning tokens and return only the answer (Usage.reasoning_tokens).
- inline in the text, between delimiters the open models write (THINK_TAGS). A chat template may open the thought
  itself (DeepSeek-R1's adds "<think>\\n" to the prompt), so a closing tag alone also ends a thought.
A reply whose thought never closed has no answer; cut off at its token budget, it is `thinking-cut-off`
(parsing.reason_code), never a number read from inside the thought.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

# name -> (opening, closing) delimiter; what follows the closing one is the answer.
THINK_TAGS: dict[str, tuple[str, str]] = {
    "think": ("<think>", "</think>"),  # DeepSeek-R1 and its distillations, Qwen3, QwQ, Phi-4-reasoning, GLM
    "thought": ("<|begin_of_thought|>", "<|end_of_thought|>"),  # OpenThoughts, Sky-T1, Bespoke-Stratos
    # gpt-oss's harmony format (special tokens kept): the analysis channel, then the final channel's message.
    "harmony": ("<|channel|>analysis<|message|>", "<|channel|>final<|message|>"),
    "seed": ("<seed:think>", "</seed:think>"),  # ByteDance Seed-OSS
    "kimi": ("◁think▷", "◁/think▷"),  # Kimi-VL-Thinking
    "magistral": ("[THINK]", "[/THINK]"),  # Mistral's Magistral
}
DEFAULT_TAGS = tuple(THINK_TAGS)  # --think-tags auto
# Harmony's framing tokens left around a thought or an answer (<|end|><|start|>assistant, <|return|>).
_HARMONY_FRAME = re.compile(r"<\|(?:end|return|start)\|>(?:assistant)?|<\|channel\|>final<\|message\|>")
# Answer-side wrappers some thought formats put around the answer (OpenThoughts' solution block).
_SOLUTION = re.compile(r"<\|(?:begin|end)_of_solution\|>")
# What may stand between a thought's end and its answer's first token: blanks and the framing above.
_LEAD = re.compile(rf"(?:\s|{_HARMONY_FRAME.pattern}|{_SOLUTION.pattern})*")


@dataclass(frozen=True)
class Split:
    """A reply's answer (what the first-number rule reads; None when the thought never closed) and its thought."""

    answer: str | None
    thought: str | None  # None: no thought in the reply (hidden reasoning shows only as tokens)
    unclosed: bool = False  # an inline thought that was opened and never closed


def parse_tags(spec: str) -> tuple[tuple[str, str], ...]:
    """--think-tags: "auto" (every THINK_TAGS format), "none", or a comma list of THINK_TAGS names and custom
    "OPEN CLOSE" pairs (one space between). Raises ValueError with the reason."""
    spec = spec.strip()
    if spec == "auto":
        return tuple(THINK_TAGS[n] for n in DEFAULT_TAGS)
    if spec == "none":
        return ()
    pairs = []
    for item in (s.strip() for s in spec.split(",")):
        if item in THINK_TAGS:
            pairs.append(THINK_TAGS[item])
            continue
        parts = item.split(" ")
        if len(parts) != 2 or not all(parts):
            raise ValueError(f"{item!r} is neither a known format ({', '.join(THINK_TAGS)}) nor an 'OPEN CLOSE' pair")
        pairs.append((parts[0], parts[1]))
    return tuple(pairs)


def split_reply(text: str | None, reasoning: str | None = None, tags: Sequence[tuple[str, str]] = ()) -> Split:
    """The reply's answer and thought. `reasoning`: a thought the provider returned apart from the text (the text is
    then the answer, though a thought inline in it is still split off); `tags`: the inline delimiters looked for."""
    if text is None:
        return Split(None, reasoning)
    found = _inline(text, tags) if tags else None
    if found is None:
        return Split(text, reasoning or None)
    answer, thought, unclosed = found
    if reasoning:
        thought = f"{reasoning}\n{thought}" if thought else reasoning
    return Split(answer, thought, unclosed)


def _inline(text: str, tags: Sequence[tuple[str, str]]) -> tuple[str | None, str, bool] | None:
    """(answer, thought, unclosed) for the delimiter pair that shows first in the text; None when none shows."""
    first = _any_tag(tuple(tags)).search(text)  # one scan in C: most replies hold no tag at all
    if first is None:
        return None
    at = first.start()  # the first pair (in the given order) with a delimiter here is the one that shows first
    open_, close = next(p for p in tags if text.startswith(p[0], at) or text.startswith(p[1], at))
    end = text.rfind(close)  # several thoughts: the answer follows the last
    opened = text.find(open_)
    if end < 0:  # opened, never closed: all of it is thought
        return None, _tidy(text[:opened] + text[opened + len(open_) :]), True
    thought = text[:end].replace(open_, "").replace(close, "\n")  # several thoughts: one, a line between each
    answer = text[end + len(close) :]
    return _tidy_answer(answer), _tidy(thought), False


@functools.lru_cache(maxsize=16)
def _any_tag(tags: tuple[tuple[str, str], ...]) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(t) for pair in tags for t in pair))


def _tidy(thought: str) -> str:
    return _HARMONY_FRAME.sub("", thought).strip()


def _tidy_answer(answer: str) -> str:
    return _SOLUTION.sub("", _HARMONY_FRAME.sub("", answer)).strip()


def thinking_cut_off(split: Split, finish_reason: str | None, hidden_reasoning_tokens: int = 0) -> bool:
    """Whether the reply hit its token budget while still thinking: an unclosed inline thought, or (a thought
    returned apart, or hidden reasoning tokens billed) with no answer text at all, and finish_reason "length"."""
    if finish_reason != "length":
        return False
    if split.unclosed:
        return True
    no_answer = split.answer is None or not split.answer.strip()
    return no_answer and (bool(split.thought) or hidden_reasoning_tokens > 0)


def answer_start(pieces: Sequence[str], text: str | None, thought: str | None = None) -> int | None:
    """Which output position holds the answer's first token, so that a score read from token probabilities
    (--scoring expected) comes from the answer and never from a thought. `pieces`: each output position's token
    text, in order (they may spell the thought too: an inline one, or one a server returned apart); `text` and
    `thought`: the reply as the backend split it. 0 when neither the reply nor its tokens hold a thought (the
    first position, as ever); None when one does and its answer's first token cannot be told: the thought never
    closed, no answer, or the tokens do not spell the answer (every THINK_TAGS format, whatever --think-tags)."""
    tags, joined = tuple(THINK_TAGS.values()), "".join(pieces)
    split = split_reply(text, thought, tags)
    if split.thought is None:  # the tokens may still spell one: a text decoded without its special tokens
        split = split_reply(joined, None, tags)
        if split.thought is None:
            return 0
    answer = (split.answer or "").strip()
    if not answer:
        return None
    # The answer follows the last closing delimiter the tokens spell (none: they spell the answer alone).
    cut = max((joined.rfind(close) + len(close) for _, close in THINK_TAGS.values() if close in joined), default=0)
    lead = _LEAD.match(joined, cut)
    offset = lead.end() if lead else cut
    if not joined.startswith(answer, offset):  # the tokens there spell another text: nothing to read
        return None
    start = 0
    for index, piece in enumerate(pieces):
        if start + len(piece) > offset:  # the token that holds the answer's first character
            return index if start >= cut else None  # one that also holds the delimiter: not the answer's own
        start += len(piece)
    return None
