"""The paper's variant (Deshpande et al. 2023, §5): one prompt per query holding both sentences and the
condition, the reply's first number its score."""

from __future__ import annotations

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
from harness.scoring.score import answer_parser, score
from harness.types import Dataset, Example, Request, Scored
from harness.variants.base import Outcome


def template(config: RunConfig) -> str:
    return template_name(describe_dataset(config.dataset).templates, config.instr, config.template, config.model)


def requests(
    config: RunConfig, queries: tuple[Example, ...], shots: tuple[tuple[Example, ...], ...], renderer: PromptRenderer
) -> tuple[Request, ...]:
    """One prompt per query, its shots before it."""
    return tuple(
        Request(q.id, renderer.render(q, s), max_tokens=config.max_tokens) for q, s in zip(queries, shots, strict=True)
    )


def scoring_backend(config: RunConfig) -> Backend:
    return make_backend(config)


def score_range(dataset: Dataset) -> tuple[float, float]:
    return dataset.label_range


def identity(config: RunConfig, prep: Prepared) -> dict[str, Any]:
    return {}  # the prompts' template and data hashes, recorded for every variant, say it all


def run_label(prep: Prepared) -> str:
    return Path(prep.renderer.name).stem


def dry_run(config: RunConfig, prep: Prepared, price: Price | None) -> tuple[list[Scored], dict[str, Any]]:
    return score(prep, None, config.seed), dry_run_estimate([Step("scoring", config, prep.requests, price)], price)


def evaluate(config: RunConfig, prep: Prepared, backend: Backend, price: Price | None) -> Outcome:
    stats = DispatchStats()
    tags = parse_tags(config.think_tags)  # the inline thought split off before the first-number rule
    constrained = config.constrain is not None
    parse = answer_parser(tags, parse_constrained if constrained else parse_score)  # --constrain: its own shape
    replies = call(backend, prep.requests, dispatch_options(config, price), stats, parse=parse)
    samples = score(prep, replies.completions, config.seed, config.parse == "strict", replies.parsed, tags, constrained)
    return Outcome(samples, {"usage": usage(replies.completions, price, stats.paid_by_batch)} | stats.record())
