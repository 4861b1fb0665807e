"""Offline baselines answer from the prompt text alone, through the common backend interface."""

from __future__ import annotations

import asyncio
import random
from types import SimpleNamespace

from harness.calling.backends.choose import make_backend
from harness.calling.backends.offline import _QUERY, OverlapScorer, RandomScorer, query_pair
from harness.config.settings import RunConfig
from harness.prompting.render import PromptRenderer
from harness.scoring.parsing import parse_score
from harness.types import Example, Request


async def _collect(backend: object, requests: list[Request]) -> list:  # type: ignore[type-arg]
    return [c async for c in backend.complete(requests)]  # type: ignore[attr-defined]


def test_overlap_reads_the_query_not_the_shots() -> None:
    query = Example("q", "a red fox runs", "a red fox runs", "The color.", None)
    shot = Example("s", "nothing shared here", "totally different words", "x", 1.0)
    prompt = PromptRenderer("csts/long.j2").render(query, [shot, shot])
    assert OverlapScorer(label_range=(1.0, 5.0)).score(prompt) == "5.00"


def test_overlap_maps_jaccard_onto_the_label_range() -> None:
    prompt = PromptRenderer("stsb/none.j2").render(Example("q", "a b c d", "a b x y", "", None), [])
    assert parse_score(OverlapScorer(label_range=(0.0, 5.0)).score(prompt)) == round(5.0 * 2 / 6, 2)


def test_overlap_without_sentences_is_invalid() -> None:
    assert parse_score(OverlapScorer().score("What is the answer?")) is None


def test_random_never_answers_with_a_number() -> None:
    completions = asyncio.run(_collect(RandomScorer(), [Request(str(i), "p") for i in range(5)]))
    assert [c.request_id for c in completions] == [str(i) for i in range(5)]
    assert all(parse_score(c.text) is None for c in completions)


def test_offline_models_need_no_key() -> None:
    backend = make_backend(RunConfig(model="overlap", dataset="stsb"))
    assert backend.name == "offline" and "not a language model" in str(backend.describe())
    assert backend.describe()["label_range"] == [0.0, 5.0]  # STS-B's range, from the run's dataset


# Pieces of prompts, keys whole and broken, and whitespace the regex's \s knows (Unicode spaces, separators).
_KEYS = ["Sentence 1:", "Sentence 2:", "Answer 1:", "Answer 2:", "Condition:", "Output:", "Sentence", "Answer"]
_PIECES = [*_KEYS, " 1:", " 2:", " ", "  ", "\n", "\t", "\u2003", "\x1c", "\x85", "a", "b c", "Cond", ":", "4.0\n"]


def _findall_last(prompt: str) -> tuple[str, str] | None:
    matches = _QUERY.findall(prompt)
    return matches[-1] if matches else None


def test_query_pair_is_the_regexs_last_match_on_any_text() -> None:
    """query_pair finds what `_QUERY.findall(prompt)[-1]` finds (the rule as first written), without the regex."""
    rng = random.Random(12)
    for _ in range(20_000):
        text = "".join(rng.choice(_PIECES) for _ in range(rng.randint(0, 30)))
        assert query_pair(text) == _findall_last(text), repr(text)


def test_query_pair_is_the_regexs_last_match_on_prompts() -> None:
    """Prompt-shaped text (shots, then the query) with keys dropped or stray pieces put in here and there."""
    rng = random.Random(7)
    for _ in range(5_000):
        parts = []
        for _ in range(rng.randint(0, 5)):
            block = ["Input: ", rng.choice(["Sentence 1:", "Answer 1:"]), " x y ", rng.choice(["Sentence 2:", ""]),
                     " z ", rng.choice(["Condition:", ""]), " w ", rng.choice(["Output:", ""]), " 4.0\n"]  # fmt: skip
            if rng.random() < 0.3:
                block.insert(rng.randrange(len(block)), rng.choice(_PIECES))
            parts += block
        text = "".join(parts)
        assert query_pair(text) == _findall_last(text), repr(text)
    query = SimpleNamespace(sentence1="a red fox", sentence2="a fox", answer1="red", answer2="?", condition="C.")
    shot = SimpleNamespace(sentence1="one", sentence2="two", answer1="x", answer2="y", condition="c", label=3.0)
    for template in ("csts/none.j2", "csts/long.j2", "csts/qa.j2", "stsb/short.j2"):
        prompt = PromptRenderer(template).render(query, [shot] * 3)  # type: ignore[arg-type]
        assert query_pair(prompt) == _findall_last(prompt) is not None, template
