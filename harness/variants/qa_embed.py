"""QA-embed variant (Tu et al. 2024, §4.1): the answers of harness/variants/answers.py embedded, a query's
prediction the cosine of its two answers' embeddings; no scoring prompt."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from harness.calling.backends.base import Backend
from harness.calling.dispatch import call
from harness.calling.estimate import dry_run_estimate
from harness.calling.options import DispatchStats, dispatch_options
from harness.calling.pricing import Price, usage
from harness.config.settings import RunConfig
from harness.datasets.load import pair_ids
from harness.prompting.prepared import Prepared
from harness.prompting.render import PromptRenderer
from harness.scoring.vectors import embedded, unusable_counts
from harness.types import Completion, Dataset, Example, Request, Scored
from harness.variants.answers import (
    ANSWER_TEMPLATE,
    AnswerKey,
    answer_estimate,
    answer_step,
    keys_of,
    question_for,
    ready,
    template_or,
)
from harness.variants.answers import identity as identity  # the Variant's hook, as qa's
from harness.variants.base import Outcome

PLACEHOLDER = "<answer>"  # in a dry run's samples, for answers not yet asked for


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity; 0.0 when either vector is all zeros."""
    import numpy as np  # here, not at the top: a dry run of any variant loads no numpy

    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    norm = float(np.linalg.norm(x) * np.linalg.norm(y))
    return float(x @ y) / norm if norm else 0.0


def embedding_requests(answers: Mapping[AnswerKey, str]) -> tuple[Request, ...]:
    """One request per distinct answer text (its id a hash of the text)."""
    texts = sorted(set(answers.values()))
    return tuple(Request("embed-" + hashlib.sha256(t.encode()).hexdigest()[:20], t, max_tokens=0) for t in texts)


def cosine_samples(
    prep: Prepared, answers: Mapping[AnswerKey, str], requests: Sequence[Request], completions: Mapping[str, Completion]
) -> list[Scored]:
    """A query's prediction: the cosine of its two answers' embeddings; an error where either is missing."""
    vectors, errors = embedded(requests, completions)  # each vector checked: a refused one is its item's error
    pairs = pair_ids(prep.dataset.examples)
    samples = []
    for q, q_shots in zip(prep.queries, prep.shots, strict=True):
        k1, k2 = keys_of(q)
        a1, a2 = answers.get(k1, ""), answers.get(k2, "")
        if k1 not in answers or k2 not in answers:
            error: str | None = f"no answer to {question_for(q.condition)!r}"
        else:
            error = next((errors[a] for a in (a1, a2) if a in errors), None)
        sim = cosine(vectors[a1], vectors[a2]) if error is None else None
        shot_ids = tuple(s.id for s in q_shots)
        samples.append(Scored.cosine(q.id, f"{a1}\n{a2}", q.label, pairs[q.id], sim, error, shot_ids))
    return samples


def dry_run_samples(prep: Prepared) -> list[Scored]:
    """No scoring prompt: one line per query naming the two answers whose embeddings it compares."""
    pairs = pair_ids(prep.dataset.examples)
    return [
        Scored.unanswered(q.id, f"{PLACEHOLDER}\n{PLACEHOLDER}", q.label, pairs.get(q.id), tuple(s.id for s in shots))
        for q, shots in zip(prep.queries, prep.shots, strict=True)
    ]


# --- the variant's path (harness/variants/base.py `Variant`) ------------------------------------------


def template(config: RunConfig) -> str:
    return template_or(config, ANSWER_TEMPLATE)  # qa-embed scores no prompt: config.json names the answers'


def requests(
    config: RunConfig, queries: tuple[Example, ...], shots: tuple[tuple[Example, ...], ...], renderer: PromptRenderer
) -> tuple[Request, ...]:
    return ()  # no scoring prompt: embeddings of the answers


def scoring_backend(config: RunConfig) -> Backend:
    # imported here: the SDK loads only when something is embedded (tests/cli/test_no_sdk.py)
    from harness.calling.backends.choose import make_embedding_backend

    return ready(config, make_embedding_backend(config))


def score_range(dataset: Dataset) -> tuple[float, float]:
    return (-1.0, 1.0)  # cosines (Spearman needs no mapping onto the labels' range)


def run_label(prep: Prepared) -> str:
    return "qa-embed"


def dry_run(config: RunConfig, prep: Prepared, price: Price | None) -> tuple[list[Scored], dict[str, Any]]:
    embeddings = {"embeddings": {"model": config.model, "requests": f"at most {2 * len(prep.queries)}"}}
    return dry_run_samples(prep), dry_run_estimate([answer_estimate(config, prep)], price, embeddings)


def evaluate(config: RunConfig, prep: Prepared, backend: Backend, price: Price | None) -> Outcome:
    config, answers, answers_file, answer_metrics = answer_step(config, prep)
    requests = embedding_requests(answers)
    stats = DispatchStats()
    options = dispatch_options(config, price)
    completions = call(backend, requests, options, stats, desc=f"embeddings ({config.model})").completions
    samples = cosine_samples(prep, answers, requests, completions)
    metrics = {"usage": usage(completions, price, stats.paid_by_batch)} | stats.record() | {"answers": answer_metrics}
    metrics["unusable_embeddings"] = unusable_counts(embedded(requests, completions)[1])
    return Outcome(samples, metrics, {"answers.jsonl": answers_file}, label_scale=False)
