"""The embedding protocol's numbers beyond the samples' own (harness/variants/case.py): each Table 1 setting's
Spearman and Pearson with the report's cluster-bootstrap CIs, its isotropy (Zhang et al. 2025, App. C), and the
CASE projection's training step (harness/variants/case_ffn.py)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from harness.config.settings import RunConfig
from harness.prompting.prepared import Prepared
from harness.scoring.isotropy import cosine_to_mean, isotropy_draws
from harness.scoring.stats import bootstrap_ci
from harness.types import Example, Scored
from harness.variants.case_inputs import primary_setting, side_vectors
from harness.variants.case_split import FfnItems

N_BOOTSTRAP = 1000  # as the report's CIs (harness/reporting/report.py N_BOOTSTRAP), seed 0


def setting_metrics(samples: Sequence[Scored], vectors: Sequence[tuple[Any, Any]]) -> dict[str, Any]:
    """n, errors, Spearman and Pearson (×100) with 95% CIs resampling sentence pairs, and of every vector the
    setting compared (both sides, stacked) I_iso (mean and sd over seeded draws of directions) and the cosine to
    their mean (Table 8)."""
    ok = [s for s in samples if s.prediction is not None and s.label is not None]
    out: dict[str, Any] = {"n": len(ok), "errors": sum(s.error is not None for s in samples)}
    if len(ok) >= 3:
        groups = [s.pair for s in ok] if all(s.pair is not None for s in ok) else None  # STS-B: items on their own
        ci = bootstrap_ci([s.prediction for s in ok], [s.label for s in ok], groups, N_BOOTSTRAP, 0)  # type: ignore[misc]
        for name, interval in ci.items():
            out[name], out[f"{name}_ci"] = interval.estimate, [interval.low, interval.high]
    stacked = [v for pair in vectors for v in pair]
    iso = isotropy_draws(np.vstack(stacked)) if stacked else None
    out["isotropy"] = None if iso is None else iso["mean"]
    out["isotropy_sd"], out["isotropy_draws"] = (None, None) if iso is None else (iso["sd"], iso["draws"])
    out["cos_to_mean"] = cosine_to_mean(np.vstack(stacked)) if stacked else None
    return out


def pairs_of(
    examples: Sequence[Example], style: str, setting: str, vectors: Mapping[str, Any]
) -> tuple[list[Example], list[tuple[Any, Any]]]:
    """The labelled examples whose vectors are all there, and their two vectors in `setting`."""
    kept, got = [], []
    for ex in examples:
        v = side_vectors(ex, style, setting, vectors)
        if ex.label is not None and not isinstance(v, str):
            kept.append(ex)
            got.append(v)
    return kept, got


def ffn_step(
    config: RunConfig,
    prep: Prepared,
    samples: list[Scored],
    items: FfnItems,
    vectors: dict[str, Any],
) -> tuple[list[Scored], dict[str, Any], dict[str, str | bytes]]:
    """Train the projection on its training items' vectors (embedded with the run's), choose its epoch on items the
    run does not score (harness/variants/case_split.py) and score the run's queries with it: (the projected samples,
    the step's metrics, the weights)."""
    from harness.variants.case_ffn import Pairs, project_cosines, train

    style, setting, e = config.embed.inputs, primary_setting(config), config.embed

    def as_pairs(examples: Sequence[Example]) -> Pairs:
        kept, got = pairs_of(examples, style, setting, vectors)
        a = np.vstack([x for x, _ in got])
        b = np.vstack([y for _, y in got])
        return Pairs(a, b, np.array([ex.label for ex in kept], dtype=float))

    train_pairs, val_pairs = as_pairs(items.train), as_pairs(items.select)
    trained = train(e.ffn, train_pairs, val_pairs, items.label_range, e.ffn_dim, e.ffn_epochs, config.seed)
    name = f"ffn-{e.ffn}.safetensors"
    out = []
    for s, q in zip(samples, prep.queries, strict=True):
        v = vectors_for(q, style, setting, vectors)
        if v is None:
            out.append(s)
            continue
        sim = float(project_cosines(trained, v[0][None, :], v[1][None, :])[0])
        out.append(Scored.cosine(s.id, s.prompt, s.label, s.pair, sim))
    metrics: dict[str, Any] = {
        "kind": trained.kind,
        "input_setting": setting,
        "seed": trained.seed,
        "dim": e.ffn_dim,
        "epochs": e.ffn_epochs,
        "best_epoch": trained.best_epoch,
        "validation_spearman": trained.val_spearman,
        "validation_curve": list(trained.curve),
        "n_params": trained.n_params,
        "n_train": len(train_pairs.labels),
        "n_validation": len(val_pairs.labels),
        "trained_on": items.trained_on,
        "epoch_chosen_on": items.chosen_on,
        "labels": items.labels,
        # what the epoch was chosen on, by id: a reader checks it against samples.jsonl's without the data
        "epoch_items_sha256": ids_hash(e.id for e in items.select),
        "train_items_sha256": ids_hash(e.id for e in items.train),
        "weights": name,
        "weights_sha256": trained.sha256,
    }
    if items.note is not None:
        metrics["note"] = items.note
    return out, metrics, {name: trained.weights}


def ids_hash(ids: Iterable[str]) -> str:
    """sha256 of the sorted ids, one a line."""
    return hashlib.sha256("".join(f"{i}\n" for i in sorted(ids)).encode()).hexdigest()


def vectors_for(ex: Example, style: str, setting: str, vectors: Mapping[str, Any]) -> tuple[Any, Any] | None:
    v = side_vectors(ex, style, setting, vectors)
    return None if isinstance(v, str) else v
