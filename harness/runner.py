"""One run, start to finish: data -> shots -> prompts -> backend -> parse -> metrics -> run folder."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.calling.backends import make_backend, make_embedding_backend
from harness.calling.backends.base import Backend
from harness.calling.calls import call, price_of, usage
from harness.calling.dispatch import DispatchStats
from harness.calling.estimate import dry_run_estimate, dry_run_samples, placeholder_prompts
from harness.calling.pricing import Price
from harness.config.settings import RunConfig
from harness.config.validate import validate
from harness.datasets.labels import apply_label_set, take_subset
from harness.datasets.load import LABEL_RANGES, load_dataset
from harness.prompting.fewshot import make_picker
from harness.prompting.render import PromptRenderer, template_name
from harness.results.provenance import git_commit, package_versions
from harness.results.write import Claim, claim, make_run_id, write_run
from harness.scoring.expected import expected_metrics
from harness.scoring.metrics import compute_metrics
from harness.scoring.score import score
from harness.types import Completion, Dataset, Example, HarnessError, Request, Scored
from harness.variants.qa import (
    ANSWER_TEMPLATE,
    SCORE_TEMPLATE,
    AnswerKey,
    answer_identity,
    answer_keys,
    answer_requests,
    embed_step,
    generate_answers,
    make_answer_backend,
    score_requests,
)


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
    validate(config)
    renderer = PromptRenderer(_template(config), dataset=config.dataset)
    dataset = load_dataset(config.dataset, config.split, config.data_dir, config.archive, config.password_file)
    as_filed = dataset
    dataset, _ = apply_label_set(dataset, config.labels)
    dataset = take_subset(dataset, config.subset, config.subset_seed)
    queries = dataset.examples[: config.limit] if config.limit is not None else dataset.examples
    picker = make_picker(config, as_filed)
    shots = tuple(picker.pick(q, config.shots) for q in queries)
    if config.variant == "sentences":
        requests = tuple(
            Request(q.id, renderer.render(q, s), max_tokens=config.max_tokens)
            for q, s in zip(queries, shots, strict=True)
        )
        return Prepared(dataset, queries, shots, requests, renderer)
    keys = tuple(answer_keys([q, *s] for q, s in zip(queries, shots, strict=True)))
    answer_reqs = tuple(answer_requests(keys, PromptRenderer(ANSWER_TEMPLATE)))
    prep = Prepared(dataset, queries, shots, (), renderer, keys, answer_reqs)
    if config.variant == "qa":
        placeholder_prompts(prep)  # renders the scoring template once now: a broken one fails before any answer
    return prep


def _template(config: RunConfig) -> str:
    if config.template is not None or config.variant == "sentences":
        return template_name(config.dataset, config.instr, config.template)
    return SCORE_TEMPLATE if config.variant == "qa" else ANSWER_TEMPLATE  # qa-embed scores no prompt


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
        **answer_identity(config, len(prep.answer_keys)),
        **_decoding_identity(config),
        **({"shot_seed": config.shot_seed} if config.shot_seed is not None else {}),
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
    validate(config)  # the same checks as a dry run; only sending needs more (an API key, an installed engine)
    backend = None if config.dry_run else _scoring_backend(config)
    price = price_of(config, backend)
    if not config.dry_run and config.variant != "sentences" and config.answers is None:
        make_answer_backend(config)  # a missing key fails here, before any work
    prep = prepare(config)
    return Planned(backend, prep, config_record(config, prep, backend), price)


def run(config: RunConfig, planned: Planned | None = None) -> RunResult:
    """Evaluate one setting and write its run folder."""
    planned = planned or plan(config)
    prompt_name = "qa-embed" if config.variant == "qa-embed" else Path(planned.prep.renderer.name).stem
    name = config.run_id or make_run_id(config.dataset, _split_label(config), config.model, config.shots, prompt_name)
    # Claimed before the first request: a results folder that cannot be written, or a --run-id in use,
    # fails here, with nothing sent; two runs started together get different folders.
    claimed = claim(config.results_dir, name, explicit=config.run_id is not None)
    try:
        return _run_claimed(config, planned, claimed)
    except BaseException:
        claimed.abandon()
        raise


def _run_claimed(config: RunConfig, planned: Planned, claimed: Claim) -> RunResult:
    backend, prep, record, price = planned.backend, planned.prep, planned.record, planned.price
    run_id = claimed.name
    if backend is None:
        estimate = dry_run_estimate(config, prep, price)
        samples = (
            dry_run_samples(config, prep)
            if config.variant == "qa-embed"
            else score(
                placeholder_prompts(prep, config.max_tokens) if config.variant == "qa" else prep, None, config.seed
            )
        )
        run_dir = write_run(config.results_dir, run_id, record, samples, estimate, claimed=claimed)
        return RunResult(run_dir, estimate)

    extra: dict[str, str] = {}
    answer_metrics: dict[str, Any] = {}
    failed: dict[str, Completion] = {}
    if config.variant != "sentences":
        answers, extra["answers.jsonl"], answer_metrics = generate_answers(
            config, prep.answer_keys, prep.answer_requests
        )
        spent = (answer_metrics.get("dispatch") or {}).get("spent_usd") or 0.0
        if config.api.max_cost is not None:  # one --max-cost for the whole run: the answers took their share
            config = dataclasses.replace(
                config, api=dataclasses.replace(config.api, max_cost=config.api.max_cost - spent)
            )
    if config.variant == "qa":
        requests, failed = score_requests(prep.queries, prep.shots, answers, prep.renderer, config.max_tokens)
        prep = dataclasses.replace(prep, requests=requests)
    stats = DispatchStats()
    if config.variant == "qa-embed":
        samples, completions = embed_step(
            config, prep.queries, prep.shots, prep.dataset, answers, backend, price, stats
        )
    else:
        todo = tuple(r for r in prep.requests if r.id not in failed)
        completions = call(backend, todo, config, price, stats) | failed
        samples = score(prep, completions, config.seed, strict=config.parse == "strict")
    metrics = dict[str, Any](
        compute_metrics(
            samples,
            _score_range(config, prep.dataset),
            on_label_scale=config.variant != "qa-embed",  # cosines are not on the 1-5 scale: no MSE
            strict=config.parse == "strict" and config.variant != "qa-embed",
        )
    )
    metrics |= expected_metrics(samples)  # --scoring expected: its own keys (*_expected), beside the parsed ones
    metrics["usage"] = usage(completions, price, stats)
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
    run_dir = write_run(config.results_dir, run_id, record, samples, metrics, predictions, extra, claimed=claimed)
    return RunResult(run_dir, metrics)


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


def _decoding_identity(config: RunConfig) -> dict[str, Any]:
    """Settings that change the requests or the scoring, recorded in the config_hash only when not the
    default, so runs made before these options existed keep their hashes (and sweeps keep reusing them)."""
    defaults = RunConfig(model="")
    names = ("chat", "stop", "max_tokens", "shot_sampler", "scoring", "parse")
    return {n: getattr(config, n) for n in names if getattr(config, n) != getattr(defaults, n)}


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
