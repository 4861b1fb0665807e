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
from harness.data import load_dataset, pair_ids
from harness.dispatch import complete_all
from harness.fewshot import ShotPicker
from harness.labels import apply_label_set, take_subset
from harness.metrics import compute_metrics
from harness.parsing import fallback_score, parse_score
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


def plan(config: RunConfig) -> Planned:
    """Build the backend, prompts and config record without calling a model (sweeps use config_hash to reuse runs)."""
    backend = None if config.dry_run else make_backend(config, _label_range(config.dataset))
    prep = prepare(config)
    return Planned(backend, prep, config_record(config, prep, backend))


def run(config: RunConfig, planned: Planned | None = None) -> RunResult:
    """Evaluate one setting and write its run folder."""
    planned = planned or plan(config)
    backend, prep, record = planned.backend, planned.prep, planned.record
    run_id = config.run_id or make_run_id(
        config.dataset, _split_label(config), config.model, config.shots, Path(prep.renderer.name).stem
    )
    if backend is None:
        tokens, method = count_tokens([r.prompt for r in prep.requests], config.model)
        metrics = {"dry_run": True, "requests": len(prep.requests), "prompt_tokens": tokens, "token_count": method}
        run_dir = write_run(config.results_dir, run_id, record, score(prep, None, config.seed), metrics)
        return RunResult(run_dir, metrics)

    completions = _complete_with_progress(backend, prep.requests, config.progress)
    samples = score(prep, completions, config.seed)
    metrics = compute_metrics(samples, prep.dataset.label_range)
    metrics["usage"] = {
        "input_tokens": sum(c.usage.input_tokens for c in completions.values()),
        "output_tokens": sum(c.usage.output_tokens for c in completions.values()),
    }
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


def _label_range(dataset: str) -> tuple[float, float]:
    from harness.data import LABEL_RANGES

    if dataset not in LABEL_RANGES:
        raise HarnessError(f"unknown dataset {dataset!r}; choose from {', '.join(LABEL_RANGES)}")
    return LABEL_RANGES[dataset]


def _complete_with_progress(backend: Backend, requests: tuple[Request, ...], show: bool) -> dict[str, Completion]:
    counts = {"invalid": 0, "errors": 0}
    # delay=2: quick runs print nothing; longer ones get a bar with the invalid and error counts so far.
    with tqdm(total=len(requests), desc=backend.model, unit="q", file=sys.stderr, delay=2, disable=not show) as bar:

        def on_done(c: Completion) -> None:
            if c.error is not None:
                counts["errors"] += 1
            elif parse_score(c.text) is None:
                counts["invalid"] += 1
            bar.update(1)
            bar.set_postfix(counts, refresh=False)

        return complete_all(backend, requests, on_done)


def _submission(samples: list[Scored], n_split: int) -> dict[str, float] | None:
    """The C-STS submission format {"0": 3.0, ...}: only when every test id has a prediction."""
    if len(samples) != n_split or any(s.prediction is None for s in samples):
        return None
    return {s.id: float(s.prediction) for s in samples}  # type: ignore[arg-type]


def _why_no_submission(samples: list[Scored], n_split: int) -> str:
    if len(samples) != n_split:
        return f"--limit evaluated {len(samples)} of {n_split} test queries"
    return f"{sum(s.prediction is None for s in samples)} requests failed; rerun to retry them"
