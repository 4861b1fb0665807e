"""The paper's variant (Deshpande et al. 2023, §5): one prompt per query holding both sentences and the
condition, the reply's first number its score."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from harness.calling.backends.base import Backend
from harness.calling.backends.choose import make_backend
from harness.calling.dispatch import call
from harness.calling.estimate import Step, dry_run_estimate
from harness.calling.options import DispatchStats, dispatch_options
from harness.calling.pricing import Price, usage
from harness.config.settings import RunConfig
from harness.datasets.choose import describe_dataset
from harness.prompting.prepared import Prepared
from harness.prompting.render import PromptRenderer, template_name
from harness.scoring.constrained import parse_constrained
from harness.scoring.parsing import parse_score
from harness.scoring.reasoning import parse_tags
from harness.scoring.repeats import combine, repeat_metrics
from harness.scoring.score import answer_parser, score
from harness.types import Dataset, Example, Request, Scored
from harness.variants.base import Outcome


def template(config: RunConfig) -> str:
    return template_name(describe_dataset(config.dataset).templates, config.instr, config.template, config.model)


def requests(
    config: RunConfig, queries: tuple[Example, ...], shots: tuple[tuple[Example, ...], ...], renderer: PromptRenderer
) -> tuple[Request, ...]:
    """One prompt per query, its shots before it; --repeats K: all the queries K times over, repeat k's requests
    `sample=k` (a cache key of its own, harness/calling/cache_keys.py) and ids `<id>#k` (the first keeps the id)."""
    once = tuple(
        Request(q.id, renderer.render(q, s), max_tokens=config.max_tokens, temperature=config.temperature)
        for q, s in zip(queries, shots, strict=True)
    )
    again = (dataclasses.replace(r, id=f"{r.id}#{k}", sample=k) for k in range(1, config.repeats) for r in once)
    return (*once, *again)


def repeat_preps(prep: Prepared, k: int) -> list[Prepared]:
    """The run's Prepared once per repeat (its requests that repeat's), for scoring each alone."""
    n = len(prep.queries)
    return [dataclasses.replace(prep, requests=prep.requests[i * n : (i + 1) * n]) for i in range(k)]


def scoring_backend(config: RunConfig) -> Backend:
    return make_backend(config)


def score_range(dataset: Dataset) -> tuple[float, float]:
    return dataset.label_range


def identity(config: RunConfig, prep: Prepared) -> dict[str, Any]:
    return {}  # the prompts' template and data hashes, recorded for every variant, say it all


def run_label(prep: Prepared) -> str:
    return Path(prep.renderer.name).stem


def dry_run(config: RunConfig, prep: Prepared, price: Price | None) -> tuple[list[Scored], dict[str, Any]]:
    first = repeat_preps(prep, config.repeats)[0]  # every request is priced (K per item); the prompts once
    return score(first, None, config.seed), dry_run_estimate([Step("scoring", config, prep.requests, price)], price)


def evaluate(config: RunConfig, prep: Prepared, backend: Backend, price: Price | None) -> Outcome:
    stats = DispatchStats()
    tags = parse_tags(config.think_tags)  # the inline thought split off before the first-number rule
    constrained = config.constrain is not None
    parse = answer_parser(tags, parse_constrained if constrained else parse_score)  # --constrain: its own shape
    replies = call(backend, prep.requests, dispatch_options(config, price), stats, parse=parse)
    strict = config.parse == "strict"
    scored = [
        score(p, replies.completions, config.seed, strict, replies.parsed, tags, constrained)
        for p in repeat_preps(prep, config.repeats)
    ]
    metrics = {"usage": usage(replies.completions, price, stats.paid_by_batch)} | stats.record()
    if config.repeats == 1:
        return Outcome(scored[0], metrics)
    samples = combine(scored, config.reduce, prep.dataset.label_range)
    return Outcome(
        samples, metrics | {"repeats": repeat_metrics(samples, config.repeats, config.reduce, config.temperature)}
    )
