"""The embedding protocol of Zhang et al. (2025, "CASE"): each sentence embedded with its condition, a pair scored
by the cosine of its two vectors, in every encoding setting of Table 1 at once (harness/variants/case_inputs.py);
isotropy (App. C) of each setting's vectors; optionally the CASE projection trained on the train split
(harness/variants/case_ffn.py). --model is the embedding model (/v1/embeddings or sentence-transformers)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from harness.calling.backends.base import Backend
from harness.calling.dispatch import call
from harness.calling.estimate import Step, dry_run_estimate
from harness.calling.options import DispatchStats, dispatch_options
from harness.calling.pricing import Price, usage
from harness.config.settings import RunConfig
from harness.datasets.choose import describe_dataset, load_dataset
from harness.datasets.load import pair_ids
from harness.prompting.prepared import Prepared
from harness.prompting.render import PromptRenderer, template_name
from harness.scoring.vectors import embedded, unusable_counts
from harness.types import Dataset, Example, HarnessError, Request, Scored
from harness.variants.base import Outcome
from harness.variants.case_inputs import (
    COND_GIVEN_SENT,
    SENT_GIVEN_COND,
    UNCONDITIONAL,
    needed,
    primary_setting,
    settings_for,
    side_vectors,
    sides,
    vector_texts,
)


def check(config: RunConfig) -> None:
    """What the embedding options need of the data, one line, before any work (their values are checked where they
    are declared: harness/config/sections.py EmbedOptions)."""
    e = config.embed
    if e.setting not in (None, "plain") and not describe_dataset(config.dataset).conditions:
        raise HarnessError(f"--case-setting {e.setting} needs conditions: {config.dataset} has only `plain`")
    if e.ffn != "none" and (not describe_dataset(config.dataset).conditions or config.split == "train"):
        raise HarnessError(
            "--case-ffn trains on the train split of a dataset with conditions (C-STS): use --dataset csts with "
            "--split validation or test"
        )


def embedding_requests(texts: Iterable[str]) -> tuple[Request, ...]:
    """One request per distinct text (its id a hash of the text), in a stable order."""
    return tuple(
        Request("embed-" + hashlib.sha256(t.encode()).hexdigest()[:20], t, max_tokens=0) for t in sorted(set(texts))
    )


def texts_of(examples: Sequence[Example], style: str, settings: tuple[str, ...]) -> set[str]:
    out: set[str] = set()
    for ex in examples:
        out |= needed(ex, style, settings)
    return out


def embed(
    config: RunConfig, backend: Backend, texts: Iterable[str], price: Price | None, what: str
) -> tuple[dict[str, Any], dict[str, str], dict[str, Any]]:
    """Every text embedded through the usual dispatch (cache, retries, --max-cost): text -> vector, text -> error,
    and the step's usage and dispatch record."""
    import numpy as np

    requests = embedding_requests(texts)
    stats = DispatchStats()
    completions = call(backend, requests, dispatch_options(config, price), stats, desc=f"{what} ({config.model})")
    done = completions.completions
    read, errors = embedded(requests, done)  # each vector checked: a refused one is its item's error (vectors.py)
    vectors = {text: np.asarray(v, dtype=float) for text, v in read.items()}
    step = {"usage": usage(done, price, stats.paid_by_batch)} | stats.record()
    return vectors, errors, step | {"unusable_embeddings": unusable_counts(errors)}


def cosine(a: Any, b: Any) -> float:
    import numpy as np

    norm = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(a @ b) / norm if norm else 0.0


def scored(
    prep: Prepared, style: str, setting: str, vectors: Mapping[str, Any], errors: Mapping[str, str]
) -> list[Scored]:
    """One sample per query: the cosine of its two vectors in `setting`, or the embedding error."""
    # C-STS: the bootstrap's clusters (both conditions of a sentence pair), as every run; STS-B: none
    pairs = pair_ids(prep.dataset.examples) if prep.dataset.conditions else {}
    out = []
    for q in prep.queries:
        s1, s2 = sides(q, style)
        prompt = f"{vector_texts(s1, setting)[0]}\n{vector_texts(s2, setting)[0]}"
        got = side_vectors(q, style, setting, vectors)
        if isinstance(got, str):
            error = f"no embedding: {errors.get(got, 'not embedded')}"
            out.append(Scored.cosine(q.id, prompt, q.label, pairs.get(q.id), None, error))
            continue
        out.append(Scored.cosine(q.id, prompt, q.label, pairs.get(q.id), cosine(*got)))
    return out


# --- the variant's path (harness/variants/base.py `Variant`) ------------------------------------------


def template(config: RunConfig) -> str:
    # recorded only: no prompt is rendered
    return template_name(describe_dataset(config.dataset).templates, config.instr, config.template)


def requests(
    config: RunConfig, queries: tuple[Example, ...], shots: tuple[tuple[Example, ...], ...], renderer: PromptRenderer
) -> tuple[Request, ...]:
    check(config)
    return embedding_requests(texts_of(queries, config.embed.inputs, settings_for(config)))


def scoring_backend(config: RunConfig) -> Backend:
    check(config)
    # imported here: the SDK loads only when something is embedded (tests/cli/test_no_sdk.py)
    from harness.calling.backends.choose import make_embedding_backend

    return make_embedding_backend(config)


def score_range(dataset: Dataset) -> tuple[float, float]:
    return (-1.0, 1.0)  # cosines


def identity(config: RunConfig, prep: Prepared) -> dict[str, Any]:
    e = config.embed
    instructions = [COND_GIVEN_SENT, SENT_GIVEN_COND, UNCONDITIONAL] if e.inputs == "instruct" else []
    case: dict[str, Any] = {
        "setting": primary_setting(config),
        "inputs": e.inputs,
        "settings": settings_for(config),
    }
    case["instructions_hash"] = hashlib.sha256("\n".join(instructions).encode()).hexdigest()[:16]
    if e.ffn != "none":
        case |= {"ffn": e.ffn, "ffn_dim": e.ffn_dim, "ffn_epochs": e.ffn_epochs}
    return {"case": case}


def run_label(prep: Prepared) -> str:
    return "case"


def _ffn_splits(config: RunConfig) -> tuple[Dataset, Dataset]:
    data = (config.data_dir, config.archive, config.password_file)
    return load_dataset(config.dataset, "train", *data), load_dataset(config.dataset, "validation", *data)


def dry_run(config: RunConfig, prep: Prepared, price: Price | None) -> tuple[list[Scored], dict[str, Any]]:
    steps = [Step("embeddings", config, prep.requests, price)]
    if config.embed.ffn != "none":
        train_split, val_split = _ffn_splits(config)
        style, setting = config.embed.inputs, (primary_setting(config),)
        more = texts_of(train_split.examples, style, setting) | texts_of(val_split.examples, style, setting)
        more -= {r.prompt for r in prep.requests}
        steps.append(Step("ffn_embeddings", config, embedding_requests(more), price))
    return scored(prep, config.embed.inputs, primary_setting(config), {}, {}), dry_run_estimate(steps, price)


def evaluate(config: RunConfig, prep: Prepared, backend: Backend, price: Price | None) -> Outcome:
    from harness.variants.case_report import ffn_step, pairs_of, setting_metrics

    style, primary = config.embed.inputs, primary_setting(config)
    texts = {r.prompt for r in prep.requests}
    splits = _ffn_splits(config) if config.embed.ffn != "none" else None
    if splits is not None:  # one calling step: a backend is closed when its step ends
        texts |= texts_of(splits[0].examples, style, (primary,)) | texts_of(splits[1].examples, style, (primary,))
    vectors, errors, step = embed(config, backend, texts, price, "embeddings")
    samples = scored(prep, style, primary, vectors, errors)
    case: dict[str, Any] = {"setting": primary, "inputs": style}
    case["settings"] = {
        s: setting_metrics(scored(prep, style, s, vectors, errors), pairs_of(prep.queries, style, s, vectors)[1])
        for s in settings_for(config)
    }
    files: dict[str, str | bytes] = {}
    if splits is not None:
        samples, case["ffn"], files = ffn_step(config, prep, samples, splits, vectors)
    metrics = step | {"case": case}
    return Outcome(samples, metrics, files, label_scale=False)
