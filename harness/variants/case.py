"""The embedding protocol of Zhang et al. (2025, "CASE"): each sentence embedded with its condition, a pair scored
by the cosine of its two vectors, in every encoding setting of Table 1 at once (harness/variants/case_inputs.py);
isotropy (App. C) of each setting's vectors; optionally the CASE projection trained on the train split
(harness/variants/case_ffn.py). --model is the embedding model (/v1/embeddings or sentence-transformers)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from harness.calling.backends.base import Backend
from harness.calling.backends.choose import backend_name, described
from harness.calling.dispatch import call
from harness.calling.estimate import Step, dry_run_estimate
from harness.calling.options import DispatchStats, dispatch_options
from harness.calling.pricing import Price, usage
from harness.config.settings import RunConfig
from harness.datasets.choose import describe_dataset
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
from harness.variants.case_split import FfnItems, ffn_items


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


def embedding_requests(texts: Iterable[str], unpooled: Mapping[str, int] | None = None) -> tuple[Request, ...]:
    """One request per distinct text (its id a hash of the text), in a stable order; `unpooled`: the length of
    each text's instruction part, left out of pooling (only where the run pools the text alone: `pooling`)."""
    return tuple(
        Request(
            "embed-" + hashlib.sha256(t.encode()).hexdigest()[:20],
            t,
            max_tokens=0,
            unpooled=(unpooled or {}).get(t, 0),
        )
        for t in sorted(set(texts))
    )


def pooling(config: RunConfig) -> tuple[str, str | None]:
    """The pooling the run does, and why it is not the one asked for (None when it is). text: only the encoded
    text's tokens (the condition's in cond), as Zhang et al. 2025 §3.1 pool them, the instruction only steering
    attention; whole: every token of the input string. Only a backend whose embedder can leave tokens out
    (sentence-transformers) pools the text alone; with concat inputs the whole input is the text."""
    e = config.embed
    if e.pooling == "whole":
        return "whole", None
    if e.inputs != "instruct":
        return "whole", None  # CONC(c+s) is itself the text encoded: nothing to leave out
    if not described(backend_name(config)).pools_text:
        return "whole", "an embeddings API pools every token it is sent, the instruction's too"
    return "text", None


def encoder_record(config: RunConfig, vectors: Mapping[str, Any]) -> dict[str, Any]:
    """What the paper's numbers depend on beyond the settings (its Table 10 sets poolings side by side): the
    encoder's own pooling method where its folder says (mean, cls, lasttoken; "own": in the model's code), and
    whether the vectors came normalised (every one of unit length within 1e-3), which changes what −c subtracts."""
    import numpy as np

    from harness.calling.backends.embeddings import folder_pooling

    norms = [float(np.linalg.norm(v)) for v in vectors.values()]
    method = folder_pooling(config.model) if described(backend_name(config)).pools_text else None
    return {
        "pooling_method": method,
        "normalized": bool(norms) and all(abs(n - 1.0) < 1e-3 for n in norms),
    }


def texts_of(examples: Sequence[Example], style: str, settings: tuple[str, ...]) -> dict[str, int]:
    """Every text the settings need, with the length of its instruction part."""
    out: dict[str, int] = {}
    for ex in examples:
        out |= needed(ex, style, settings)
    return out


def _requests(config: RunConfig, texts: Mapping[str, int]) -> tuple[Request, ...]:
    return embedding_requests(texts, texts if pooling(config)[0] == "text" else None)


def embed(
    config: RunConfig, backend: Backend, texts: Mapping[str, int], price: Price | None, what: str
) -> tuple[dict[str, Any], dict[str, str], dict[str, Any]]:
    """Every text embedded through the usual dispatch (cache, retries, --max-cost): text -> vector, text -> error,
    and the step's usage and dispatch record."""
    import numpy as np

    requests = _requests(config, texts)
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
    if config.embed.ffn != "none":  # before anything is written: no items left to learn the run's labels from
        ffn_items(config, queries)
    return _requests(config, texts_of(queries, config.embed.inputs, settings_for(config)))


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
    if pooling(config)[0] == "text":  # only then: a run that pools every token keeps the config_hash it had
        case["pooling"] = "text"
    if e.ffn != "none":
        case |= {"ffn": e.ffn, "ffn_dim": e.ffn_dim, "ffn_epochs": e.ffn_epochs}
    return {"case": case}


def run_label(prep: Prepared) -> str:
    return "case"


def _ffn_items(config: RunConfig, prep: Prepared) -> FfnItems:
    return ffn_items(config, (prep.whole or prep).queries)  # a --shard part: the whole run's scored items


def dry_run(config: RunConfig, prep: Prepared, price: Price | None) -> tuple[list[Scored], dict[str, Any]]:
    steps = [Step("embeddings", config, prep.requests, price)]
    if config.embed.ffn != "none":
        items = _ffn_items(config, prep)
        style, setting = config.embed.inputs, (primary_setting(config),)
        more = texts_of(items.train, style, setting) | texts_of(items.select, style, setting)
        sent = {r.prompt for r in prep.requests}
        steps.append(
            Step("ffn_embeddings", config, _requests(config, {t: n for t, n in more.items() if t not in sent}), price)
        )
    return scored(prep, config.embed.inputs, primary_setting(config), {}, {}), dry_run_estimate(steps, price)


def evaluate(config: RunConfig, prep: Prepared, backend: Backend, price: Price | None) -> Outcome:
    from harness.variants.case_report import ffn_step, pairs_of, setting_metrics

    style, primary = config.embed.inputs, primary_setting(config)
    texts = texts_of(prep.queries, style, settings_for(config))
    items = _ffn_items(config, prep) if config.embed.ffn != "none" else None
    if items is not None:  # one calling step: a backend is closed when its step ends
        texts |= texts_of(items.train, style, (primary,)) | texts_of(items.select, style, (primary,))
    vectors, errors, step = embed(config, backend, texts, price, "embeddings")
    samples = scored(prep, style, primary, vectors, errors)
    done, why = pooling(config)
    case: dict[str, Any] = {"setting": primary, "inputs": style, "pooling": done}
    if why is not None:
        case["pooling_note"] = f"--case-pooling {config.embed.pooling} asked, {done} done: {why}"
    case |= encoder_record(config, vectors)
    case["settings"] = {
        s: setting_metrics(scored(prep, style, s, vectors, errors), pairs_of(prep.queries, style, s, vectors)[1])
        for s in settings_for(config)
    }
    files: dict[str, str | bytes] = {}
    if items is not None:
        samples, case["ffn"], files = ffn_step(config, prep, samples, items, vectors)
    metrics = step | {"case": case}
    return Outcome(samples, metrics, files, label_scale=False)
