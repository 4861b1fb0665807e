"""The embedding protocol's numbers beyond the samples' own (harness/variants/case.py): each Table 1 setting's
Spearman and Pearson with the report's cluster-bootstrap CIs, its isotropy (Zhang et al. 2025, App. C), and the
CASE projection's training step (harness/variants/case_ffn.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from harness.config.settings import RunConfig
from harness.prompting.prepared import Prepared
from harness.scoring.isotropy import DIRECTIONS, isotropy
from harness.scoring.stats import bootstrap_ci
from harness.types import Dataset, Example, Scored
from harness.variants.case_inputs import primary_setting, side_vectors

N_BOOTSTRAP = 1000  # as the report's CIs (harness/reporting/report.py N_BOOTSTRAP), seed 0


def setting_metrics(samples: Sequence[Scored], vectors: Sequence[tuple[Any, Any]], seed: int = 0) -> dict[str, Any]:
    """n, errors, Spearman and Pearson (×100) with 95% CIs resampling sentence pairs, and I_iso of every vector
    the setting compared (both sides, stacked)."""
    ok = [s for s in samples if s.prediction is not None and s.label is not None]
    out: dict[str, Any] = {"n": len(ok), "errors": sum(s.error is not None for s in samples)}
    if len(ok) >= 3:
        groups = [s.pair for s in ok] if all(s.pair is not None for s in ok) else None  # STS-B: items on their own
        ci = bootstrap_ci([s.prediction for s in ok], [s.label for s in ok], groups, N_BOOTSTRAP, 0)  # type: ignore[misc]
        for name, interval in ci.items():
            out[name], out[f"{name}_ci"] = interval.estimate, [interval.low, interval.high]
    stacked = [v for pair in vectors for v in pair]
    out["isotropy"] = isotropy(np.vstack(stacked), DIRECTIONS, seed) if stacked else None
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
    splits: tuple[Dataset, Dataset],
    vectors: dict[str, Any],
) -> tuple[list[Scored], dict[str, Any], dict[str, str | bytes]]:
    """Train the projection on the train split's vectors (embedded with the run's), choose its epoch on
    validation and score the run's queries with it: (the projected samples, the step's metrics, the weights)."""
    from harness.variants.case_ffn import Pairs, project_cosines, train

    train_split, val_split = splits
    style, setting, e = config.embed.inputs, primary_setting(config), config.embed

    def as_pairs(examples: Sequence[Example]) -> Pairs:
        kept, got = pairs_of(examples, style, setting, vectors)
        a = np.vstack([x for x, _ in got])
        b = np.vstack([y for _, y in got])
        return Pairs(a, b, np.array([ex.label for ex in kept], dtype=float))

    train_pairs, val_pairs = as_pairs(train_split.examples), as_pairs(val_split.examples)
    trained = train(e.ffn, train_pairs, val_pairs, train_split.label_range, e.ffn_dim, e.ffn_epochs, config.seed)
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
        "weights": name,
        "weights_sha256": trained.sha256,
    }
    if config.split == "validation":
        metrics["note"] = "epoch chosen on this same validation split: its Spearman here is optimistic"
    return out, metrics, {name: trained.weights}


def vectors_for(ex: Example, style: str, setting: str, vectors: Mapping[str, Any]) -> tuple[Any, Any] | None:
    v = side_vectors(ex, style, setting, vectors)
    return None if isinstance(v, str) else v
