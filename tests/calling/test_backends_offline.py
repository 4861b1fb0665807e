"""Offline baselines answer from the prompt text alone, through the common backend interface."""

from __future__ import annotations

import asyncio

from harness.calling.backends import make_backend
from harness.calling.backends.offline import OverlapScorer, RandomScorer
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
    backend = make_backend(RunConfig(model="overlap", dataset="stsb"), (0.0, 5.0))
    assert backend.name == "offline" and "not a language model" in str(backend.describe())
