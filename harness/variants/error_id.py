"""Annotation-error identification from a finished qa run (Tu et al. 2024, §4.2): its answers.jsonl joined to the
C-STS validation rows, embedded (one vector per answer, one per concatenated pair), and handed to
harness/scoring/errors.py, which clusters, ranks and scores them."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from harness.calling.dispatch import call
from harness.calling.options import DispatchStats, dispatch_options
from harness.calling.pricing import price_of
from harness.config.settings import ApiOptions, RunConfig
from harness.scoring.errors import Item
from harness.scoring.vectors import usable, vector_from
from harness.types import Example, HarnessError, Request
from harness.variants.answers import AnswerKey, keys_of, read_answers

HASH_MODEL = "hash"  # an offline stand-in: hashed bag of words, for tests and dry checks, not for numbers to report
HASH_DIM = 64
SCORES_KIND = "error-identification"  # scores.json's "kind": the report shows the folders inside a run that say so

Embedder = Callable[[Sequence[str]], Mapping[str, Sequence[float] | None]]  # None: no usable vector for that text
UNUSABLE = "unusable embedding"  # left_out's reason for a row one of whose three vectors cannot be used


def pair_text(a1: str, a2: str) -> str:
    """The concatenated pair embedded for clustering."""
    return f"{a1} ; {a2}"


def hash_embedding(text: str, dim: int = HASH_DIM) -> list[float]:
    """Counts of the text's lower-cased words hashed into `dim` buckets (sha256: the same on every machine)."""
    vector = [0.0] * dim
    for word in re.findall(r"\w+", text.lower()):
        vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % dim] += 1.0
    return vector


def hash_embedder(texts: Sequence[str]) -> dict[str, list[float]]:
    return {t: hash_embedding(t) for t in texts}


def backend_embedder(
    model: str, backend: str | None, base_urls: tuple[str, ...], results_dir: Path, progress: bool = False
) -> Embedder:
    """Texts embedded by an embedding backend (harness/calling/backends/embeddings.py) through the usual dispatch
    (cache, retries); a text that fails fails the command."""
    config = RunConfig(
        model=model, backend=backend, results_dir=results_dir, progress=progress, api=ApiOptions(base_urls=base_urls)
    )

    def embed(texts: Sequence[str]) -> dict[str, list[float] | None]:
        # imported here: the SDK loads only when something is embedded (a report reads this module's constants)
        from harness.calling.backends.choose import make_embedding_backend

        embedder = make_embedding_backend(config)
        unique = sorted(set(texts))
        requests = [Request("embed-" + hashlib.sha256(t.encode()).hexdigest()[:20], t, max_tokens=0) for t in unique]
        options = dispatch_options(config, price_of(config, embedder))
        completions = call(embedder, requests, options, DispatchStats(), desc=f"embeddings ({model})").completions
        out = {}
        for r in requests:
            c = completions[r.id]
            if c.text is None:
                raise HarnessError(f"embedding failed ({model}): {c.error}")
            out[r.prompt] = vector_from(c.text)  # a cached reply that cannot be read leaves its rows out, never fails
        return out

    return embed


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    import numpy as np

    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    norm = float(np.linalg.norm(x) * np.linalg.norm(y))
    return float(x @ y) / norm if norm else 0.0


def joined(
    examples: Sequence[Example], answers: Mapping[AnswerKey, str], reannotated: Mapping[str, float | None]
) -> tuple[list[tuple[Example, str, str, int]], dict[str, int]]:
    """(example, answer 1, answer 2, re-annotated label) of every row that has both answers and a valid
    re-annotation; and counts of the rows left out, by reason."""
    kept, left_out = [], {"no answer": 0, "no re-annotated label": 0}
    for e in examples:
        k1, k2 = keys_of(e)
        if k1 not in answers or k2 not in answers:
            left_out["no answer"] += 1
        elif reannotated.get(e.id) is None or e.label is None:
            left_out["no re-annotated label"] += 1
        else:
            kept.append((e, answers[k1], answers[k2], round(float(reannotated[e.id]))))  # type: ignore[arg-type]
    return kept, left_out


def items_from(
    examples: Sequence[Example],
    answers_file: Path,
    reannotated: Mapping[str, float | None],
    embed: Embedder,
) -> tuple[list[Item], dict[str, int]]:
    """The instances error identification works on, embedded."""
    if not Path(answers_file).is_file():
        raise HarnessError(f"{answers_file} not found: errors reads a finished --variant qa or qa-embed run folder")
    rows, left_out = joined(examples, read_answers(answers_file), reannotated)
    texts = [t for _, a1, a2, _ in rows for t in (a1, a2, pair_text(a1, a2))]
    vectors = usable(embed(texts) if texts else {})
    left_out[UNUSABLE] = 0
    items = []
    for e, a1, a2, label in rows:
        if not {a1, a2, pair_text(a1, a2)} <= vectors.keys():
            left_out[UNUSABLE] += 1
            continue
        pair = tuple(float(x) for x in vectors[pair_text(a1, a2)])
        items.append(Item(e.id, cosine(vectors[a1], vectors[a2]), pair, round(float(e.label)), label))  # type: ignore[arg-type]
    return items, left_out
