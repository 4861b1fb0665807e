"""One run, start to finish: data -> shots -> prompts -> backend -> parse -> metrics -> run folder."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.backends import check_scoring, make_backend, make_embedding_backend
from harness.backends.base import Backend
from harness.calls import call, output_budget, price_of, usage
from harness.data import LABEL_RANGES, load_dataset, pair_ids
from harness.dispatch import DispatchStats
from harness.expected import expected_metrics, expected_score
from harness.fewshot import make_picker
from harness.labels import apply_label_set, take_subset
from harness.metrics import compute_metrics
from harness.parsing import fallback_score, parse_score
from harness.pricing import Price
from harness.prompts import PromptRenderer, template_name
from harness.provenance import git_commit, package_versions
from harness.qa import (
    ANSWER_TEMPLATE,
    SCORE_TEMPLATE,
    AnswerKey,
    answer_config,
    answer_keys,
    answer_requests,
    cosine,
    embedding_requests,
    generate_answers,
    make_answer_backend,
    question_for,
    score_requests,
)
from harness.results import make_run_id, write_run
from harness.tokens import count_tokens
from harness.types import Completion, Dataset, Example, HarnessError, Request, RunConfig, Scored

VARIANTS = ("sentences", "qa", "qa-embed")


@dataclass(frozen=True)
class Prepared:
    """Everything decided before any model is called."""

    dataset: Dataset
    queries: tuple[Example, ...]
    shots: tuple[tuple[Example, ...], ...]
    requests: tuple[Request, ...]  # sentences variant; the qa variant renders its own once answers exist
    renderer: PromptRenderer
    answer_keys: tuple[AnswerKey, ...] = ()  # qa variants: every unique (sentence, condition)
    answer_requests: tuple[Request, ...] = ()


@dataclass(frozen=True)
class RunResult:
    run_dir: Path
    metrics: dict[str, Any]


def prepare(config: RunConfig) -> Prepared:
    """Load the data, pick shots and render one Request per query (or per unique answer, for qa variants)."""
    _check_variant(config)
    renderer = PromptRenderer(_template(config))
    if config.shots < 0:
        raise HarnessError(f"--shots must be 0 or more, got {config.shots}")
    as_filed = load_dataset(config.dataset, config.split, config.data_dir, config.archive, config.password_file)
    dataset, _ = apply_label_set(as_filed, config.labels)
    dataset = take_subset(dataset, config.subset, config.subset_seed)
    queries = dataset.examples[: config.limit] if config.limit is not None else dataset.examples
    picker = make_picker(config, as_filed)
    shots = tuple(picker.pick(q, config.shots) for q in queries)
    if config.variant == "sentences":
        requests = tuple(Request(q.id, renderer.render(q, s)) for q, s in zip(queries, shots, strict=True))
        return Prepared(dataset, queries, shots, requests, renderer)
    keys = tuple(answer_keys([q, *s] for q, s in zip(queries, shots, strict=True)))
    answer_reqs = tuple(answer_requests(keys, PromptRenderer(ANSWER_TEMPLATE)))
    return Prepared(dataset, queries, shots, (), renderer, keys, answer_reqs)


def _template(config: RunConfig) -> str:
    if config.template is not None or config.variant == "sentences":
        return template_name(config.dataset, config.instr, config.template)
    return SCORE_TEMPLATE if config.variant == "qa" else ANSWER_TEMPLATE  # qa-embed scores no prompt


def _check_variant(config: RunConfig) -> None:
    if config.variant not in VARIANTS:
        raise HarnessError(f"unknown variant {config.variant!r}; choose from {', '.join(VARIANTS)}")
    if config.variant != "sentences" and config.dataset != "csts":
        raise HarnessError(f"--variant {config.variant} turns C-STS conditions into questions: use --dataset csts")
    if config.variant == "sentences" and (config.answers or config.answer_model):
        raise HarnessError("--answers and --answer-model belong to --variant qa or qa-embed")


def score(prep: Prepared, completions: dict[str, Completion] | None, seed: int) -> list[Scored]:
    """Parse each output by the reference rule; an invalid one gets the seeded fallback draw."""
    pairs = pair_ids(prep.dataset.examples) if prep.dataset.name == "csts" else {}
    out = []
    for q, shots, req in zip(prep.queries, prep.shots, prep.requests, strict=True):
        c = completions[req.id] if completions is not None else None
        text = c.text if c is not None else None
        error = c.error if c is not None else None
        parsed = parse_score(text)
        valid = parsed is not None
        if c is None or error is not None:
            prediction = None  # no answer yet (dry run) or a failed request: never a fallback draw
        else:
            prediction = parsed if valid else fallback_score(seed, q.id, prep.dataset.label_range)
        pair = pairs.get(q.id)
        probs = c.score_probs if c is not None and error is None else None
        exp = expected_score(probs, prep.dataset.label_range) if probs is not None else None
        shot_ids = tuple(s.id for s in shots)
        out.append(
            Scored(q.id, req.prompt, shot_ids, text, parsed, valid, prediction, q.label, error, pair, *(exp or ()))
        )
    return out


def config_record(config: RunConfig, prep: Prepared, backend: Backend | None) -> dict[str, Any]:
    """config.json: every setting, hashes of what produced the prompts, versions. No secrets."""
    settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in dataclasses.asdict(config).items()}
    identity = {
        "dataset": config.dataset,
        "split": config.split,
        "model": config.model,
        "backend": backend.name if backend else config.backend,
        "backend_params": backend.describe() if backend else None,
        "shots": config.shots,
        "seed": config.seed,
        "limit": config.limit,
        "labels": config.labels,
        "subset": config.subset,
        "subset_seed": config.subset_seed,
        "variant": config.variant,
        **({"scoring": config.scoring} if config.scoring != "parsed" else {}),
        **({"shot_sampler": config.shot_sampler} if config.shot_sampler != "seeded" else {}),
        **({"shot_seed": config.shot_seed} if config.shot_seed is not None else {}),
        **_answer_identity(config, prep),
        "template": prep.renderer.name,
        "template_hashes": prep.renderer.hashes(),
        "data_hashes": prep.dataset.file_hashes,
    }
    # Two runs with the same config_hash would send the same requests and score them the same way.
    config_hash = hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:16]
    return {
        "settings": settings,
        **identity,
        "config_hash": config_hash,
        "label_range": list(_score_range(config, prep.dataset)),
        "n_queries": len(prep.queries),
        "packages": package_versions(),
        "git": git_commit(),
    }


@dataclass(frozen=True)
class Planned:
    """A run up to its first model call: the backend, the prompts and config.json (with its config_hash)."""

    backend: Backend | None
    prep: Prepared
    record: dict[str, Any]
    price: Price | None


def plan(config: RunConfig) -> Planned:
    """Build the backend, prompts and config record without calling a model (sweeps use config_hash to reuse runs)."""
    check_scoring(config)  # a dry run refuses what the real run would
    backend = None if config.dry_run else _scoring_backend(config)
    price = price_of(config, backend)
    if not config.dry_run and config.variant != "sentences" and config.answers is None:
        make_answer_backend(config)  # a missing key or an unknown answer model fails here, before any work
    prep = prepare(config)
    return Planned(backend, prep, config_record(config, prep, backend), price)


def run(config: RunConfig, planned: Planned | None = None) -> RunResult:
    """Evaluate one setting and write its run folder."""
    planned = planned or plan(config)
    backend, prep, record, price = planned.backend, planned.prep, planned.record, planned.price
    prompt_name = "qa-embed" if config.variant == "qa-embed" else Path(prep.renderer.name).stem
    if config.run_id is not None and (config.results_dir / config.run_id).exists():
        raise HarnessError(f"{config.results_dir / config.run_id} already exists: choose another --run-id")
    run_id = config.run_id or _unused(
        config.results_dir, make_run_id(config.dataset, _split_label(config), config.model, config.shots, prompt_name)
    )
    if backend is None:
        estimate = _dry_run_estimate(config, prep, price)
        samples = score(_placeholder_prompts(prep) if config.variant == "qa" else prep, None, config.seed)
        run_dir = write_run(config.results_dir, run_id, record, samples, estimate)
        return RunResult(run_dir, estimate)

    extra: dict[str, str] = {}
    answer_metrics: dict[str, Any] = {}
    failed: dict[str, Completion] = {}
    if config.variant != "sentences":
        answers, extra["answers.jsonl"], answer_metrics = generate_answers(
            config, prep.answer_keys, prep.answer_requests
        )
    if config.variant == "qa":
        requests, failed = score_requests(prep.queries, prep.shots, answers, prep.renderer)
        prep = dataclasses.replace(prep, requests=requests)
    stats = DispatchStats()
    if config.variant == "qa-embed":
        samples, completions = _embed_step(config, prep, answers, backend, price, stats)
    else:
        todo = tuple(r for r in prep.requests if r.id not in failed)
        completions = call(backend, todo, config, price, stats) | failed
        samples = score(prep, completions, config.seed)
    metrics = dict[str, Any](compute_metrics(samples, _score_range(config, prep.dataset)))
    metrics |= expected_metrics(samples)  # --scoring expected: its own keys (*_expected), beside the parsed ones
    metrics["usage"] = usage(completions, price)
    metrics |= stats.record()
    if answer_metrics:
        metrics["answers"] = answer_metrics
    predictions = None
    if config.dataset == "csts" and config.split == "test":
        predictions = _submission(samples, len(prep.dataset.examples))
        metrics["submission"] = (
            "test_predictions.json"
            if predictions
            else "not written: " + _why_no_submission(samples, len(prep.dataset.examples))
        )
    run_dir = write_run(config.results_dir, run_id, record, samples, metrics, predictions, extra)
    return RunResult(run_dir, metrics)


def _unused(results_dir: Path, run_id: str) -> str:
    """The run id, with -2, -3, ... added when a run of the same setting started in the same second."""
    n, candidate = 1, run_id
    while (results_dir / candidate).exists():
        n += 1
        candidate = f"{run_id}-{n}"
    return candidate


def _split_label(config: RunConfig) -> str:
    """The split as named in run ids: validation, validation-reannotated, validation-reannotated-test, …"""
    parts = [config.split]
    if config.subset != "all":
        parts.append(config.subset)
        if config.labels == "original":
            parts.append("original-labels")
    if config.labels != "original" and config.labels not in config.subset:
        parts.append(config.labels)
    return "-".join(parts)


# --- helpers: backends, the qa variants, dry-run estimate ----------------------------------------


def _scoring_backend(config: RunConfig) -> Backend:
    if config.variant == "qa-embed":
        return make_embedding_backend(config)
    return make_backend(config, _label_range(config.dataset))


def _score_range(config: RunConfig, dataset: Dataset) -> tuple[float, float]:
    """What predictions range over: the labels', or cosine's [-1, 1] for qa-embed (Spearman needs no mapping)."""
    return (-1.0, 1.0) if config.variant == "qa-embed" else dataset.label_range


def _answer_identity(config: RunConfig, prep: Prepared) -> dict[str, Any]:
    """What decides a qa run's answers, for config.json and its config_hash."""
    if config.variant == "sentences":
        return {}
    record: dict[str, Any] = {
        "answer_model": answer_config(config).model,
        "answer_backend": config.answer_backend,
        "answer_template_hashes": PromptRenderer(ANSWER_TEMPLATE).hashes(),
        "unique_answers": len(prep.answer_keys),
    }
    if config.answers is not None:
        record["answers_file_sha256"] = hashlib.sha256(Path(config.answers).read_bytes()).hexdigest()
    return record


def _placeholder_prompts(prep: Prepared) -> Prepared:
    """Figure 9 prompts with "<answer>" in place of answers not yet asked for (dry run: token counts)."""
    placeholders = dict.fromkeys(prep.answer_keys, "<answer>")
    requests, _ = score_requests(prep.queries, prep.shots, placeholders, prep.renderer)
    return dataclasses.replace(prep, requests=requests)


def _embed_step(
    config: RunConfig,
    prep: Prepared,
    answers: dict[AnswerKey, str],
    backend: Backend,
    price: Price | None,
    stats: DispatchStats,
) -> tuple[list[Scored], dict[str, Completion]]:
    """qa-embed: embed each distinct answer once; a query's prediction is the cosine of its two answers'."""
    requests = embedding_requests(answers)
    completions = call(backend, requests, config, price, stats, desc=f"embeddings ({config.model})", scores=False)
    vectors = {r.prompt: json.loads(c.text) for r in requests if (c := completions[r.id]).text is not None}
    errors = {r.prompt: c.error for r in requests if (c := completions[r.id]).error is not None}
    pairs = pair_ids(prep.dataset.examples)
    samples = []
    for q, shots in zip(prep.queries, prep.shots, strict=True):
        k1, k2 = AnswerKey(q.sentence1, q.condition), AnswerKey(q.sentence2, q.condition)
        a1, a2 = answers.get(k1, ""), answers.get(k2, "")
        if k1 not in answers or k2 not in answers:
            error: str | None = f"no answer to {question_for(q.condition)!r}"
        else:
            error = next((errors[a] for a in (a1, a2) if a in errors), None)
        sim = cosine(vectors[a1], vectors[a2]) if error is None else None
        output = None if sim is None else f"{sim:.6f}"
        shot_ids = tuple(s.id for s in shots)
        samples.append(
            Scored(q.id, f"{a1}\n{a2}", shot_ids, output, sim, sim is not None, sim, q.label, error, pairs[q.id])
        )
    return samples, completions


def _dry_run_estimate(config: RunConfig, prep: Prepared, price: Price | None) -> dict[str, Any]:
    """Requests, prompt tokens and the most the run could cost (every answer at its full output budget)."""
    steps = []
    if config.variant != "sentences":
        acfg = answer_config(config)
        steps.append(("answers", acfg, prep.answer_requests, price_of(acfg, None)))
    if config.variant == "qa":
        steps.append(("scoring", config, _placeholder_prompts(prep).requests, price))
    elif config.variant == "sentences":
        steps.append(("scoring", config, prep.requests, price))
    estimate: dict[str, Any] = {"dry_run": True, "requests": 0, "prompt_tokens": 0, "max_output_tokens": 0}
    costs = []
    for step, cfg, requests, step_price in steps:
        tokens, method = count_tokens([r.prompt for r in requests], cfg.model)
        output = sum(output_budget(cfg, r) for r in requests)
        cost = round(step_price.cost(tokens, output), 4) if step_price else None
        estimate[step] = {"model": cfg.model, "requests": len(requests), "prompt_tokens": tokens, "max_cost_usd": cost}
        estimate["requests"] += len(requests)
        estimate["prompt_tokens"] += tokens
        estimate["max_output_tokens"] += output
        estimate["token_count"] = method
        costs.append(cost)
    if config.variant == "qa-embed":
        estimate["embeddings"] = {"model": config.model, "requests": f"at most {2 * len(prep.queries)}"}
    estimate["max_cost_usd"] = None if None in costs else round(sum(c for c in costs if c is not None), 4)
    estimate["price"] = dataclasses.asdict(price) if price else None
    return estimate


def _label_range(dataset: str) -> tuple[float, float]:
    if dataset not in LABEL_RANGES:
        raise HarnessError(f"unknown dataset {dataset!r}; choose from {', '.join(LABEL_RANGES)}")
    return LABEL_RANGES[dataset]


def _submission(samples: list[Scored], n_split: int) -> dict[str, float] | None:
    """The C-STS submission format {"0": 3.0, ...}: only when every test id has a prediction."""
    if len(samples) != n_split or any(s.prediction is None for s in samples):
        return None
    return {s.id: float(s.prediction) for s in samples}  # type: ignore[arg-type]


def _why_no_submission(samples: list[Scored], n_split: int) -> str:
    if len(samples) != n_split:
        return f"--limit evaluated {len(samples)} of {n_split} test queries"
    return f"{sum(s.prediction is None for s in samples)} requests failed; rerun to retry them"
