"""Offline reference scorers: baselines that answer a rendered prompt without any model. Not LLMs."""

from __future__ import annotations

import functools
import re
from collections.abc import AsyncIterator, Sequence

from harness.calling.backends.base import LocalBackend
from harness.calling.backends.description import Description
from harness.config.settings import RunConfig
from harness.types import Completion, HarnessError, Request

# The last "Sentence 1: ... Sentence 2: ..." block of a prompt is the query (shots come before it); the QA
# variant's prompts (Tu et al. Figure 9) say "Answer 1/2", so there it measures the answers' overlap. The rule
# is the last match of _QUERY.findall; query_pair finds it with str.find instead, several times faster on a
# prompt with shots, where the regex steps through every character (a test compares the two on random text).
_QUERY = re.compile(r"(?:Sentence|Answer) 1:\s*(.*?)\s*(?:Sentence|Answer) 2:\s*(.*?)\s*(?:Condition:|Output:)", re.S)
_FIRST, _SECOND, _END = ("Sentence 1:", "Answer 1:"), ("Sentence 2:", "Answer 2:"), ("Condition:", "Output:")
_WORD = re.compile(r"[a-z0-9]+")
OFFLINE_MODELS = ("random", "overlap")
# Said wherever a baseline's numbers are shown (the run's lines, a sweep's cell lines, the report's tables): its
# invalid rate reads like a model's failure but is how the baseline is built.
BASELINE_NOTES = {
    "random": "the random baseline replies with no number by design, so every reply is invalid (100 %) and every "
    "prediction is the seeded uniform fallback draw: the floor a model's fallback alone would score",
    "overlap": "the overlap baseline is word overlap of the two sentences (no language model, no condition read)",
}


def query_pair(prompt: str) -> tuple[str, str] | None:
    """The last match of _QUERY.findall(prompt) (the two sentences), or None when it has none.

    How findall reads a prompt: a match starts at a first key; its lazy group 1, between two greedy \\s*, runs to
    the nearest second key, stripped (\\s and str.isspace are the same test); group 2 likewise to the nearest end
    key; the next match is looked for after that end key. Without a second key, or an end key after it, a first
    key starts no match, and no later one does either (it sees fewer of both). Keys never overlap.

    So the match at the last first key is findall's last one, unless an earlier match runs past that key. None
    can when the first key before it is followed by a second key and then an end key, both before it: the match
    of that earlier key, if any, closes there at the latest. That is the usual prompt (shots, then the query),
    answered from its end; any other prompt is walked from the start, as findall walks it."""
    first, n1 = _last(prompt, _FIRST, len(prompt))
    if first >= 0:
        before, n0 = _last(prompt, _FIRST, first)
        if before < 0 or _closes(prompt, before + n0, first):
            second, n2 = _next(prompt, _SECOND, first + n1)
            end, _ = _next(prompt, _END, second + n2) if second >= 0 else (-1, 0)
            if end >= 0:
                return prompt[first + n1 : second].strip(), prompt[second + n2 : end].strip()
    last, pos = None, 0
    while True:  # findall's own walk
        first, n1 = _next(prompt, _FIRST, pos)
        second, n2 = _next(prompt, _SECOND, first + n1) if first >= 0 else (-1, 0)
        end, n3 = _next(prompt, _END, second + n2) if second >= 0 else (-1, 0)
        if end < 0:
            return last
        last, pos = (prompt[first + n1 : second].strip(), prompt[second + n2 : end].strip()), end + n3


def _closes(text: str, start: int, stop: int) -> bool:
    """Whether text[start:stop] holds a second key and, after it, an end key."""
    second, n2 = _next(text, _SECOND, start, stop)
    return second >= 0 and _next(text, _END, second + n2, stop)[0] >= 0


def _next(text: str, keys: tuple[str, str], start: int, stop: int | None = None) -> tuple[int, int]:
    """(position, length) of the first of the two keys within text[start:stop], or (-1, 0). The second key is
    looked for only before the first one's hit (keys never overlap), so an absent key costs a short search."""
    a, b = keys
    i = text.find(a, start, stop)
    j = text.find(b, start, i if i >= 0 else stop)
    return (j, len(b)) if j >= 0 else (i, len(a)) if i >= 0 else (-1, 0)


def _last(text: str, keys: tuple[str, str], stop: int) -> tuple[int, int]:
    """(position, length) of the last of the two keys within text[:stop], or (-1, 0); as _next, backwards."""
    a, b = keys
    i = text.rfind(a, 0, stop)
    j = text.rfind(b, max(i, 0), stop)
    return (j, len(b)) if j >= 0 else (i, len(a)) if i >= 0 else (-1, 0)


@functools.lru_cache(maxsize=1 << 16)
def overlap_score(s1: str, s2: str, label_range: tuple[float, float]) -> str:
    """Jaccard word overlap mapped linearly onto the label range, as text. Cached: a sweep's cells ask the same
    query pairs with other instructions and shots."""
    a, b = set(_WORD.findall(s1.lower())), set(_WORD.findall(s2.lower()))
    jaccard = len(a & b) / len(a | b) if a | b else 0.0
    lo, hi = label_range
    return f"{lo + (hi - lo) * jaccard:.2f}"


def from_config(config: RunConfig, line: Description) -> LocalBackend:
    """The offline baseline --model names (its line says nothing more); overlap maps onto the dataset's label
    range."""
    if config.model == "random":
        return RandomScorer()
    if config.model == "overlap":
        from harness.datasets.choose import describe_dataset

        return OverlapScorer(label_range=describe_dataset(config.dataset).label_range)
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
        pair = query_pair(prompt)
        if pair is None:
            return "no sentence pair found in the prompt"
        return overlap_score(*pair, tuple(self.label_range))  # type: ignore[arg-type]

    async def complete(self, requests: Sequence[Request]) -> AsyncIterator[Completion]:
        for r in requests:
            yield Completion(r.id, self.score(r.prompt))

    def describe(self) -> dict[str, object]:
        return {
            "kind": "offline baseline, not a language model",
            "rule": "Jaccard word overlap of sentence 1 and 2 mapped onto the label range",
            "label_range": list(self.label_range),
        }
