"""Offline reference scorers: baselines that answer a rendered prompt without any model. Not LLMs."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence

from harness.calling.backends.base import LocalBackend
from harness.config.settings import RunConfig
from harness.types import Completion, HarnessError, Request

# The last "Sentence 1: ... Sentence 2: ..." block of a prompt is the query (shots come before it); the QA
# variant's prompts (Tu et al. Figure 9) say "Answer 1/2", so there it measures the answers' overlap.
_QUERY = re.compile(r"(?:Sentence|Answer) 1:\s*(.*?)\s*(?:Sentence|Answer) 2:\s*(.*?)\s*(?:Condition:|Output:)", re.S)
_WORD = re.compile(r"[a-z0-9]+")
OFFLINE_MODELS = ("random", "overlap")


def from_config(config: RunConfig, label_range: tuple[float, float]) -> LocalBackend:
    """The offline baseline --model names."""
    if config.model == "random":
        return RandomScorer()
    if config.model == "overlap":
        return OverlapScorer(label_range=label_range)
    raise HarnessError(f"offline backend has no model {config.model!r}; choose from {', '.join(OFFLINE_MODELS)}")


class RandomScorer(LocalBackend):
    """Never answers with a number, so every query takes the seeded fallback: the chance floor."""

    name = "offline"
    cacheable = False  # a pure function of the prompt: nothing worth storing

    def __init__(self, model: str = "random") -> None:
        self.model = model

    async def complete(self, requests: Sequence[Request]) -> AsyncIterator[Completion]:
        for r in requests:
            yield Completion(r.id, "no score (random baseline)")

    def describe(self) -> dict[str, object]:
        return {"kind": "offline baseline, not a language model", "rule": "never answers; fallback draws only"}


class OverlapScorer(LocalBackend):
    """Word-overlap (Jaccard) of the query's two sentences, mapped linearly onto the label range.

    It reads the two sentences back from the prompt text, as a model would; it ignores the
    condition, which is why it does well on STS-B and poorly on C-STS.
    """

    name = "offline"
    cacheable = False  # a pure function of the prompt: nothing worth storing

    def __init__(self, model: str = "overlap", label_range: tuple[float, float] = (1.0, 5.0)) -> None:
        self.model = model
        self.label_range = label_range

    def score(self, prompt: str) -> str:
        matches = _QUERY.findall(prompt)
        if not matches:
            return "no sentence pair found in the prompt"
        s1, s2 = matches[-1]
        a, b = set(_WORD.findall(s1.lower())), set(_WORD.findall(s2.lower()))
        jaccard = len(a & b) / len(a | b) if a | b else 0.0
        lo, hi = self.label_range
        return f"{lo + (hi - lo) * jaccard:.2f}"

    async def complete(self, requests: Sequence[Request]) -> AsyncIterator[Completion]:
        for r in requests:
            yield Completion(r.id, self.score(r.prompt))

    def describe(self) -> dict[str, object]:
        return {
            "kind": "offline baseline, not a language model",
            "rule": "Jaccard word overlap of sentence 1 and 2 mapped onto the label range",
            "label_range": list(self.label_range),
        }
