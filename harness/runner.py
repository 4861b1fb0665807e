"""One run, start to finish: data -> shots -> prompts -> backend -> parse -> metrics -> run folder."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.calling.backends.base import Backend, LocalBackend, RemoteBackend
from harness.calling.options import cache_path
from harness.calling.pricing import Price, price_of
from harness.calling.redaction import redact_all, url_secrets
from harness.config.keys import identity_settings
from harness.config.settings import RunConfig
from harness.datasets.choose import describe_dataset, file_record, load_dataset
from harness.datasets.description import LoadCache
from harness.datasets.items import ids_hash, select
from harness.datasets.labels import apply_label_set, label_set_name, take_subset
from harness.prompting.fewshot import ReferencePicker, ShotPicker, make_picker
from harness.prompting.pinned import PinnedPicker
from harness.prompting.prepared import Prepared
from harness.prompting.render import PromptRenderer
from harness.results.provenance import git_commit, package_versions
from harness.results.write import Claim, claim, make_run_id, model_label, write_run
from harness.types import Dataset, HarnessError, Scored
from harness.variants import variant_module
from harness.variants.base import Variant
from harness.variants.validate import validate_run


@dataclass(frozen=True)
class RunResult:
    run_dir: Path
    metrics: dict[str, Any]
    # What went into the folder, for a sweep's report (results/read.py written_run), which so reads no file back.
    config: dict[str, Any] = field(default_factory=dict)  # config.json
    samples: tuple[Scored, ...] = ()  # the scored samples
    records: tuple[dict[str, Any], ...] = ()  # samples.jsonl's lines, as dicts


@dataclass
class Shared:
    """What the cells of one sweep share instead of redoing it per cell: loaded splits (each archive decrypted
    and each file parsed once), shot pickers (each query's shots drawn once per k), compiled templates and the
    provenance config.json records. A lone run gets one of its own."""

    data: LoadCache = field(default_factory=LoadCache)
    pickers: dict[tuple[Any, ...], ShotPicker | ReferencePicker | PinnedPicker] = field(default_factory=dict)
    renderers: dict[tuple[str, str], PromptRenderer] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)

    def renderer(self, template: str, folder: str) -> PromptRenderer:
        """The compiled template; `folder`: the dataset's folder of templates/ (its includes are looked up there)."""
        if (template, folder) not in self.renderers:
            self.renderers[template, folder] = PromptRenderer(template, dataset=folder)
        return self.renderers[template, folder]

    def picker(self, config: RunConfig, as_filed: Dataset) -> ShotPicker | ReferencePicker | PinnedPicker:
        """The shot sampler of this dataset, split, data, sampler and seed, made once (a sweep's cells vary only the
        dataset of these, but all are in the key); --shot-ids: the shots it pins."""
        data = (config.data_dir, config.archive, config.password_file)
        key = (config.dataset, config.split, *data, config.shot_sampler, config.seed, config.shot_seed, config.shot_ids)
        if key not in self.pickers:
            self.pickers[key] = (
                make_picker(config, as_filed, self.data)
                if config.shot_ids is None
                else PinnedPicker(as_filed.name, as_filed.pool, config.shot_ids, paired=as_filed.conditions)
            )
        return self.pickers[key]

    def versions(self) -> dict[str, Any]:
        """Package versions and the git commit, looked up once (the second a subprocess, or two)."""
        if not self.provenance:
            self.provenance = {"packages": package_versions(), "git": git_commit()}
        return self.provenance


def variant_of(config: RunConfig) -> Variant:
    """The variant's module: the one place a run's path depends on --variant (harness/variants/__init__.py VARIANTS)."""
    return variant_module(config.variant)


def prepare(config: RunConfig, shared: Shared | None = None) -> Prepared:
    """Load the data, pick shots and render the prompts known before any call (one per query, sentences variant).
    `shared`: what earlier cells of the same sweep loaded, drew and compiled. The config is checked (`plan`)."""
    shared = shared or Shared()
    variant = variant_of(config)
    renderer = shared.renderer(variant.template(config), describe_dataset(config.dataset).templates)
    data = (config.data_dir, config.archive, config.password_file)
    dataset = load_dataset(config.dataset, config.split, *data, cache=shared.data)
    as_filed = dataset
    dataset, _ = apply_label_set(dataset, config.labels)
    dataset = take_subset(dataset, config.subset, config.subset_seed)
    where = f"{config.dataset} {config.split}" + (f" ({config.subset})" if config.subset != "all" else "")
    queries = select(dataset.examples, config.limit, config.sample, config.sample_seed, config.ids, where)
    picker = shared.picker(config, as_filed)
    shots = tuple(picker.pick(q, config.shots) for q in queries)
    whole = Prepared(dataset, queries, shots, (), renderer)
    if config.shard is not None:  # drawn for every query first, so a part's shots are the whole run's
        k, n = config.shard
        queries, shots = queries[k - 1 :: n], shots[k - 1 :: n]
    requests = variant.requests(config, queries, shots, renderer)
    return Prepared(dataset, queries, shots, requests, renderer, whole if config.shard is not None else None)


def config_record(
    config: RunConfig, prep: Prepared, backend: Backend | None, shared: Shared | None = None
) -> dict[str, Any]:
    """config.json: every setting, hashes of what produced the prompts, versions. No secrets: the credentials a
    --base-url carries (`?api-key=`, `user:pass@`) are redacted before anything is recorded or hashed, and those of
    the URL an SDK's variable gave (OPENAI_BASE_URL: the backend's `secrets`, its key too)."""
    settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in dataclasses.asdict(config).items()}
    in_urls = [s for url in config.api.base_urls for s in url_secrets(url)]
    in_urls += backend.secrets if isinstance(backend, RemoteBackend) else ()
    settings = redact_all(settings, in_urls)
    whole = prep.whole or prep  # a --shard part is identified as the whole run plus its part
    identity = {
        # Every REQUEST, READING or ITEMS setting not at its default, from the declarations' marks (config/keys.py);
        # the entries after it say some of them as resolved for this run (the dataset's name, the template's file,
        # the backend ...; a dataset file's content is in data_hashes).
        # --ids is there as the ids it chose (ids_hash below), wherever the file lies.
        **{k: v for k, v in identity_settings(config).items() if k != "ids"},
        "dataset": prep.dataset.name,
        "split": config.split,
        "model": config.model,
        "backend": backend.name if backend else config.backend,
        "backend_params": backend.describe() if backend else None,
        "shots": config.shots,
        "seed": config.seed,
        "limit": config.limit,
        **_items_identity(config, whole),
        "labels": config.labels,
        "subset": config.subset,
        "subset_seed": config.subset_seed,
        "variant": config.variant,
        **variant_of(config).identity(config, whole),
        **({"shot_seed": config.shot_seed} if config.shot_seed is not None else {}),
        **({"shots_hash": shots_hash(whole)} if any(whole.shots) else {}),
        "template": prep.renderer.name,
        "template_hashes": prep.renderer.hashes(),
        "data_hashes": prep.dataset.file_hashes,
    }
    identity = redact_all(identity, in_urls)
    # Two runs with the same config_hash would send the same requests and score them the same way.
    config_hash = hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:16]
    part: dict[str, Any] = {}
    if config.shard is not None:  # its own hash (a sweep never reuses a part as the whole), and the whole's
        k, n = config.shard
        part = {"shard": {"part": k, "of": n, "whole_hash": config_hash, "whole_queries": len(whole.queries)}}
        config_hash = hashlib.sha256(f"{config_hash} shard {k}/{n}".encode()).hexdigest()[:16]
    return {
        "settings": settings,
        **identity,
        "config_hash": config_hash,
        **part,
        "label_range": list(variant_of(config).score_range(prep.dataset)),
        **_dataset_file(config.dataset),
        "n_queries": len(prep.queries),
        **(shared or Shared()).versions(),  # packages, git
    }


@dataclass(frozen=True)
class Planned:
    """A run up to its first model call: the backend, the prompts and config.json (with its config_hash)."""

    backend: Backend | None
    prep: Prepared
    record: dict[str, Any]
    price: Price | None


def plan(config: RunConfig, shared: Shared | None = None) -> Planned:
    """Build the backend, prompts and config record without calling a model (sweeps use config_hash to reuse runs;
    their cells share one `shared`)."""
    validate_run(config)  # the same checks as a dry run; only sending needs more (an API key, an installed engine)
    # Built before any work, so that a missing key or engine fails here (the answer model's too). A missing key and
    # missing data are told together, in one line, so that a first run does not stop on each in turn.
    missing: list[str] = []
    backend = None
    if not config.dry_run:
        _check_dataset(config.dataset)
        try:
            backend = variant_of(config).scoring_backend(config)
        except HarnessError as e:
            missing.append(str(e))
    shared = shared or Shared()
    try:
        prep = prepare(config, shared)
    except HarnessError as e:
        raise HarnessError("; and ".join([*missing, str(e)])) from None
    if missing:
        raise HarnessError(missing[0])
    price = price_of(config, backend)
    return Planned(backend, prep, config_record(config, prep, backend, shared), price)


def _rescore(config: RunConfig, planned: Planned) -> str:
    """What a taken --run-id's refusal adds where it is so (issue 42: a researcher re-ran a finished run's command
    and did not know that another --run-id costs nothing): the cache answers every request it holds, none is
    sent again. Not with --no-cache or --refresh, nor for a backend that keeps nothing (the offline baselines)."""
    path = cache_path(config)
    backend = planned.backend
    if (
        path is None
        or config.api.refresh
        or backend is None
        or (isinstance(backend, LocalBackend) and not backend.cacheable)
    ):
        return ""
    return (
        f" (the same settings under another --run-id are scored from the response cache {path}: no answer it "
        "holds is asked for again)"
    )


def run(config: RunConfig, planned: Planned | None = None) -> RunResult:
    """Evaluate one setting and write its run folder."""
    planned = planned or plan(config)
    prompt_name = variant_of(config).run_label(planned.prep)
    part = f"-part{config.shard[0]}of{config.shard[1]}" if config.shard is not None else ""
    name = config.run_id or make_run_id(
        planned.prep.dataset.name, _split_label(config), model_label(config.model), config.shots, prompt_name + part
    )
    # Claimed before the first request: a results folder that cannot be written, or a --run-id in use,
    # fails here, with nothing sent; two runs started together get different folders.
    claimed = claim(config.results_dir, name, explicit=config.run_id is not None, rescore=_rescore(config, planned))
    try:
        return _run_claimed(config, planned, claimed)
    except BaseException:
        claimed.abandon()
        raise


def _run_claimed(config: RunConfig, planned: Planned, claimed: Claim) -> RunResult:
    """prepared -> the variant's path -> metrics -> run folder."""
    backend, prep, record, price = planned.backend, planned.prep, planned.record, planned.price
    variant = variant_of(config)
    if backend is None:
        samples, estimate = variant.dry_run(config, prep, price)
        written = write_run(config.results_dir, claimed.name, record, samples, estimate, claimed=claimed)
        return RunResult(written.run_dir, estimate)

    # Here, not at the top: numpy loads with the metrics, and a dry run computes none.
    from harness.scoring.expected import expected_metrics
    from harness.scoring.metrics import compute_metrics

    outcome = variant.evaluate(config, prep, backend, price)
    samples = outcome.samples
    metrics = dict[str, Any](
        compute_metrics(
            samples,
            variant.score_range(prep.dataset),
            on_label_scale=outcome.label_scale,  # cosines are not on the 1-5 scale: no MSE
            strict=config.parse == "strict" and outcome.label_scale,
        )
    )
    # --scoring expected: its own keys (*_expected), beside the parsed ones
    metrics |= expected_metrics(samples, config.scoring == "expected")
    metrics |= outcome.metrics  # usage, cache, dispatch (and the qa variants' answers)
    predictions = None
    if prep.dataset.name == "csts" and config.split == "test":  # C-STS's leaderboard format
        predictions = _submission(samples, len(prep.dataset.examples))
        metrics["submission"] = (
            "test_predictions.json"
            if predictions
            else "not written: " + _why_no_submission(samples, len(prep.dataset.examples))
        )
    written = write_run(config.results_dir, claimed.name, record, samples, metrics, predictions, outcome.files, claimed)
    return RunResult(written.run_dir, metrics, record, tuple(samples), written.records)


def _split_label(config: RunConfig) -> str:
    """The split as named in run ids: validation, validation-reannotated, validation-reannotated-test, …"""
    parts = [config.split]
    if config.subset != "all":
        parts.append(config.subset)
        if config.labels == "original":
            parts.append("original-labels")
    if config.labels != "original" and config.labels not in config.subset:
        parts.append(label_set_name(config.labels))  # a labels file: labels-<its stem>
    return "-".join(parts)


# --- helpers ---------------------------------------------------------------------------------------


def _items_identity(config: RunConfig, whole: Prepared) -> dict[str, Any]:
    """An --ids file's content: a digest of the ids it chose (the file may change under the same name). --sample
    and --sample-seed are in the identity as their marks say (config/keys.py)."""
    if config.ids is not None:
        return {"ids_hash": ids_hash([q.id for q in whole.queries])}
    return {}


def shots_hash(prep: Prepared) -> str:
    """A digest of the shots drawn for every query (their ids, in order): part of the config_hash, so a change to
    a draw (a sampler's code, a pool's order) makes a new cell, never a reuse of one drawn the old way."""
    drawn = [[q.id, [s.id for s in shots]] for q, shots in zip(prep.queries, prep.shots, strict=True)]
    return hashlib.sha256(json.dumps(drawn, separators=(",", ":")).encode()).hexdigest()[:16]


def _check_dataset(dataset: str) -> None:
    """Before a backend is built (a dry run meets an unknown dataset when it loads the data)."""
    describe_dataset(dataset)


def _dataset_file(dataset: str) -> dict[str, Any]:
    """config.json's record of a user's dataset file (its hash is also in data_hashes, so in the identity)."""
    described = describe_dataset(dataset)
    return {"dataset_file": file_record(described)} if described.file else {}


def _submission(samples: list[Scored], n_split: int) -> dict[str, float] | None:
    """The C-STS submission format {"0": 3.0, ...}: only when every test id has a prediction."""
    if len(samples) != n_split or any(s.prediction is None for s in samples):
        return None
    return {s.id: float(s.prediction) for s in samples}  # type: ignore[arg-type]


def _why_no_submission(samples: list[Scored], n_split: int) -> str:
    if len(samples) != n_split:
        return f"--limit evaluated {len(samples)} of {n_split} test queries"
    return f"{sum(s.prediction is None for s in samples)} requests failed; rerun to retry them"
