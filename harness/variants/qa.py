"""QA-answer variant (Tu et al. 2024, §4-5): each condition a question, answered per sentence
(harness/variants/answers.py); the two answers, not the sentences, go into the scoring prompt (Figure 9)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.calling.backends.base import Backend
from harness.calling.backends.choose import make_backend
from harness.calling.dispatch import call
from harness.calling.estimate import Step, dry_run_estimate
from harness.calling.options import DispatchStats, dispatch_options
from harness.calling.pricing import Price, usage
from harness.config.settings import RunConfig
from harness.prompting.prepared import Prepared
from harness.prompting.render import PromptRenderer
from harness.scoring.reasoning import parse_tags
from harness.scoring.score import answer_parser, score
from harness.types import Completion, Dataset, Example, Request, Scored
from harness.variants.answers import (
    AnswerKey,
    answer_estimate,
    answer_keys,
    answer_step,
    keys_of,
    question_for,
    ready,
    template_or,
)
from harness.variants.answers import identity as identity  # the Variant's hook, as qa-embed's
from harness.variants.base import Outcome

SCORE_TEMPLATE = "csts/qa.j2"  # Figure 9
PLACEHOLDER = "<answer>"  # in a dry run's prompts, for answers not yet asked for


def qa_view(example: Example, answers: Mapping[AnswerKey, str]) -> dict[str, Any]:
    """What the Figure 9 template sees for one example: its two answers, condition and label."""
    k1, k2 = keys_of(example)
    return {
        "answer1": answers[k1],
        "answer2": answers[k2],
        "condition": example.condition,
        "label": example.label,
    }


def score_requests(
    queries: Sequence[Example],
    shots: Sequence[Sequence[Example]],
    answers: Mapping[AnswerKey, str],
    renderer: PromptRenderer,
    max_tokens: int = 20,
) -> tuple[tuple[Request, ...], dict[str, Completion]]:
    """Figure 9 prompts for queries whose answers (and their shots' answers) all exist; the rest fail as errors."""
    requests, failed = [], {}
    for q, q_shots in zip(queries, shots, strict=True):
        missing = [k for e in (q, *q_shots) for k in keys_of(e) if k not in answers]
        if missing:
            requests.append(Request(q.id, ""))
            failed[q.id] = Completion(q.id, None, error=f"no answer to {question_for(missing[0].condition)!r}")
        else:
            views = [qa_view(s, answers) for s in q_shots]
            prompt = renderer.render(qa_view(q, answers), views)  # type: ignore[arg-type]
            requests.append(Request(q.id, prompt, max_tokens=max_tokens))
    return tuple(requests), failed


def placeholder_prompts(prep: Prepared, max_tokens: int = 20) -> Prepared:
    """Figure 9 prompts with "<answer>" in place of answers not yet asked for (dry run: token counts)."""
    requests = _placeholder_requests(prep.queries, prep.shots, prep.renderer, max_tokens)
    return dataclasses.replace(prep, requests=requests)


def _placeholder_requests(
    queries: Sequence[Example], shots: Sequence[Sequence[Example]], renderer: PromptRenderer, max_tokens: int
) -> tuple[Request, ...]:
    placeholders = dict.fromkeys(answer_keys([q, *s] for q, s in zip(queries, shots, strict=True)), PLACEHOLDER)
    return score_requests(queries, shots, placeholders, renderer, max_tokens)[0]


# --- the variant's path (harness/variants/base.py `Variant`) ------------------------------------------


def template(config: RunConfig) -> str:
    return template_or(config, SCORE_TEMPLATE)


def requests(
    config: RunConfig, queries: tuple[Example, ...], shots: tuple[tuple[Example, ...], ...], renderer: PromptRenderer
) -> tuple[Request, ...]:
    """None before the answers exist; the scoring template is rendered once now, so a broken one fails here."""
    _placeholder_requests(queries, shots, renderer, config.max_tokens)
    return ()


def scoring_backend(config: RunConfig) -> Backend:
    return ready(config, make_backend(config))


def score_range(dataset: Dataset) -> tuple[float, float]:
    return dataset.label_range


def run_label(prep: Prepared) -> str:
    return Path(prep.renderer.name).stem


def dry_run(config: RunConfig, prep: Prepared, price: Price | None) -> tuple[list[Scored], dict[str, Any]]:
    scoring = placeholder_prompts(prep, config.max_tokens)
    steps = [answer_estimate(config, prep), Step("scoring", config, scoring.requests, price)]
    return score(scoring, None, config.seed), dry_run_estimate(steps, price)


def evaluate(config: RunConfig, prep: Prepared, backend: Backend, price: Price | None) -> Outcome:
    config, answers, answers_file, answer_metrics = answer_step(config, prep)
    requests, failed = score_requests(prep.queries, prep.shots, answers, prep.renderer, config.max_tokens)
    prep = dataclasses.replace(prep, requests=requests)
    todo = tuple(r for r in requests if r.id not in failed)
    stats = DispatchStats()
    tags = parse_tags(config.think_tags)  # the inline thought split off before the first-number rule
    replies = call(backend, todo, dispatch_options(config, price), stats, parse=answer_parser(tags))
    completions = replies.completions | failed
    samples = score(prep, completions, config.seed, config.parse == "strict", replies.parsed, tags)
    metrics = {"usage": usage(completions, price, stats.paid_by_batch)} | stats.record() | {"answers": answer_metrics}
    return Outcome(samples, metrics, {"answers.jsonl": answers_file})
