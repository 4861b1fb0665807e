"""One run, start to finish: data -> shots -> prompts -> backend -> parse -> metrics -> run folder."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from harness.backends import make_backend
from harness.backends.base import Backend
from harness.cache import ResponseCache
from harness.data import load_dataset, pair_ids
from harness.dispatch import DispatchOptions, DispatchStats, RetryPolicy, complete_all
from harness.fewshot import ShotPicker
from harness.labels import apply_label_set, take_subset
from harness.metrics import compute_metrics
from harness.parsing import fallback_score, parse_score
from harness.pricing import Price, price_for
from harness.prompts import PromptRenderer, template_name
from harness.provenance import git_commit, package_versions
from harness.results import make_run_id, write_run
from harness.tokens import count_tokens
from harness.types import Completion, Dataset, Example, HarnessError, Request, RunConfig, Scored


@dataclass(frozen=True)
class Prepared:
    """Everything decided before any model is called."""

    dataset: Dataset
    queries: tuple[Example, ...]
    shots: tuple[tuple[Example, ...], ...]
    requests: tuple[Request, ...]
    renderer: PromptRenderer


@dataclass(frozen=True)
class RunResult:
    run_dir: Path
    metrics: dict[str, Any]


def prepare(config: RunConfig) -> Prepared:
    """Load the data, pick shots and render one Request per query."""
    renderer = PromptRenderer(template_name(config.dataset, config.instr, config.template))
    if config.shots < 0:
        raise HarnessError(f"--shots must be 0 or more, got {config.shots}")
    dataset = load_dataset(config.dataset, config.split, config.data_dir, config.archive, config.password_file)
    dataset, _ = apply_label_set(dataset, config.labels)
    dataset = take_subset(dataset, config.subset, config.subset_seed)
    queries = dataset.examples[: config.limit] if config.limit is not None else dataset.examples
    picker = ShotPicker(dataset.name, dataset.pool, config.seed)
    shots = tuple(picker.pick(q, config.shots) for q in queries)
    requests = tuple(Request(q.id, renderer.render(q, s)) for q, s in zip(queries, shots, strict=True))
    return Prepared(dataset, queries, shots, requests, renderer)


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
        out.append(
            Scored(q.id, req.prompt, tuple(s.id for s in shots), text, parsed, valid, prediction, q.label, error, pair)
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
        "label_range": list(prep.dataset.label_range),
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
    backend = None if config.dry_run else make_backend(config, _label_range(config.dataset))
    price = _price(config, backend)
    prep = prepare(config)
    return Planned(backend, prep, config_record(config, prep, backend), price)


def run(config: RunConfig, planned: Planned | None = None) -> RunResult:
    """Evaluate one setting and write its run folder."""
    planned = planned or plan(config)
    backend, prep, record, price = planned.backend, planned.prep, planned.record, planned.price
    run_id = config.run_id or make_run_id(
        config.dataset, _split_label(config), config.model, config.shots, Path(prep.renderer.name).stem
    )
    if backend is None:
        estimate = _dry_run_estimate(config, prep, price)
        run_dir = write_run(config.results_dir, run_id, record, score(prep, None, config.seed), estimate)
        return RunResult(run_dir, estimate)

    stats = DispatchStats()
    completions = _complete_with_progress(backend, prep.requests, config, price, stats)
    samples = score(prep, completions, config.seed)
    metrics = dict[str, Any](compute_metrics(samples, prep.dataset.label_range))
    metrics["usage"] = _usage(completions, price)
    metrics |= stats.record()
    predictions = None
    if config.dataset == "csts" and config.split == "test":
        predictions = _submission(samples, len(prep.dataset.examples))
        metrics["submission"] = (
            "test_predictions.json"
            if predictions
            else "not written: " + _why_no_submission(samples, len(prep.dataset.examples))
        )
    run_dir = write_run(config.results_dir, run_id, record, samples, metrics, predictions)
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


# --- API backends: price, cache, dry-run estimate ------------------------------------------------


def _price(config: RunConfig, backend: Backend | None) -> Price | None:
    """The model's price for API backends (None when unknown); --max-cost needs one, checked before any work."""
    if backend is not None and not getattr(backend, "remote", False):
        return None
    price = price_for(config.model, config.api.prices)
    if config.api.max_cost is not None and price is None and not config.dry_run:
        raise HarnessError(
            f"--max-cost needs a price for {config.model!r}: none in the package table; pass --prices FILE"
        )
    return price


def _usage(completions: dict[str, Completion], price: Price | None) -> dict[str, Any]:
    """Tokens of every answer the results use (cached ones included) and what they cost at list price."""
    tokens_in = sum(c.usage.input_tokens for c in completions.values())
    tokens_out = sum(c.usage.output_tokens for c in completions.values())
    return {
        "input_tokens": tokens_in,
        "output_tokens": tokens_out,
        "cost_usd": round(price.cost(tokens_in, tokens_out), 6) if price else None,
        "price": dataclasses.asdict(price) if price else "unknown: no entry in the price table (--prices FILE)",
    }


def _dry_run_estimate(config: RunConfig, prep: Prepared, price: Price | None) -> dict[str, Any]:
    """Requests, prompt tokens and the most the run could cost (every answer at its full output budget)."""
    tokens, method = count_tokens([r.prompt for r in prep.requests], config.model)
    output = sum(_output_budget(config, r) for r in prep.requests)
    return {
        "dry_run": True,
        "requests": len(prep.requests),
        "prompt_tokens": tokens,
        "token_count": method,
        "max_output_tokens": output,
        "max_cost_usd": round(price.cost(tokens, output), 4) if price else None,
        "price": dataclasses.asdict(price) if price else None,
    }


def _output_budget(config: RunConfig, request: Request) -> int:
    from harness.backends import backend_for
    from harness.backends.openai import is_reasoning_model

    try:
        name = config.backend or backend_for(config.model)
    except HarnessError:
        return request.max_tokens
    reasoning = config.api.reasoning if config.api.reasoning is not None else is_reasoning_model(config.model)
    return config.api.reasoning_tokens if name == "openai" and reasoning else request.max_tokens


def _dispatch_options(config: RunConfig, backend: Backend, price: Price | None) -> DispatchOptions:
    api = config.api
    cacheable = getattr(backend, "cacheable", True)  # offline baselines answer instantly: nothing to keep
    cache = None if api.no_cache or not cacheable else ResponseCache(api.cache or config.results_dir / "cache.sqlite")
    return DispatchOptions(
        concurrency=api.concurrency,
        retry=RetryPolicy(max_retries=api.max_retries, timeout=api.timeout),
        cache=cache,
        refresh=api.refresh,
        max_cost=api.max_cost,
        price=price,
    )


def _label_range(dataset: str) -> tuple[float, float]:
    from harness.data import LABEL_RANGES

    if dataset not in LABEL_RANGES:
        raise HarnessError(f"unknown dataset {dataset!r}; choose from {', '.join(LABEL_RANGES)}")
    return LABEL_RANGES[dataset]


def _complete_with_progress(
    backend: Backend, requests: tuple[Request, ...], config: RunConfig, price: Price | None, stats: DispatchStats
) -> dict[str, Completion]:
    counts = {"invalid": 0, "errors": 0}
    spent = 0.0
    options = _dispatch_options(config, backend, price)
    # delay=2: quick runs print nothing; longer ones get rate, ETA, invalid, errors and cost so far.
    bar = tqdm(total=len(requests), desc=backend.model, unit="q", file=sys.stderr, delay=2, disable=not config.progress)
    with bar:

        def on_done(c: Completion) -> None:
            nonlocal spent
            if c.error is not None:
                counts["errors"] += 1
            elif parse_score(c.text) is None:
                counts["invalid"] += 1
            if price is not None and not c.cached:
                spent += price.cost_of(c.usage)
            bar.update(1)
            bar.set_postfix(counts | ({"cost": f"${spent:.4f}"} if price is not None else {}), refresh=False)

        try:
            return complete_all(backend, requests, on_done, options, stats)
        finally:
            if options.cache is not None:
                options.cache.close()


def _submission(samples: list[Scored], n_split: int) -> dict[str, float] | None:
    """The C-STS submission format {"0": 3.0, ...}: only when every test id has a prediction."""
    if len(samples) != n_split or any(s.prediction is None for s in samples):
        return None
    return {s.id: float(s.prediction) for s in samples}  # type: ignore[arg-type]


def _why_no_submission(samples: list[Scored], n_split: int) -> str:
    if len(samples) != n_split:
        return f"--limit evaluated {len(samples)} of {n_split} test queries"
    return f"{sum(s.prediction is None for s in samples)} requests failed; rerun to retry them"
