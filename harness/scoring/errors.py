"""Annotation-error identification (Tu et al. 2024, §4.2, Figure 4, Table 2, App. A.2), the pure part.

Answer pairs are clustered (k-means over one embedding of each concatenated pair); within each cluster the pairs
are ranked by the cosine of their two answers' embeddings and the ranks mapped to a *rank label* 1-5 by a ranking
distribution; an instance is an error candidate where its rank label and its original label disagree. Everything
is fitted (centroids, distribution, K) on one half of the instances and scored on the other against the
re-annotation: an instance whose re-annotated label differs from its original one is an error.

No model is called here: vectors come in as arrays (harness/variants/error_id.py makes them).
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness.scoring.metrics import spearman
from harness.types import HarnessError

DISTRIBUTIONS = ("even", "original", "reannotated")
LABELS = (1, 2, 3, 4, 5)


@dataclass(frozen=True)
class Item:
    """One instance: its uid, the cosine of its two answers, its pair embedding and both labels."""

    uid: str
    cosine: float
    pair_vector: tuple[float, ...]
    original: int
    reannotated: int

    @property
    def is_error(self) -> bool:
        return self.original != self.reannotated


@dataclass(frozen=True)
class Scores:
    precision: float
    recall: float
    f1: float
    tp: int
    fp: int
    fn: int
    tn: int

    def record(self) -> dict[str, Any]:
        return {"precision": self.precision, "recall": self.recall, "f1": self.f1} | {
            "tp": self.tp, "fp": self.fp, "fn": self.fn, "tn": self.tn,
        }  # fmt: skip


@dataclass(frozen=True)
class Result:
    distribution: str
    proportions: tuple[float, ...]
    best_k: int
    fit_f1_by_k: dict[int, float]
    test: Scores  # the held-out half at best_k
    no_cluster: Scores  # the held-out half at K = 1 (Table 2's "No Cluster")
    test_f1_by_k: dict[int, float]  # the held-out half at every K (Figure 10), for reading only: K is chosen on fit
    rows: list[dict[str, Any]] = field(default_factory=list)  # the held-out half's instances at best_k
    # Yardsticks beside the F1 (Table 2 cannot be read without them): every held-out instance flagged (its F1 is
    # set by the share of errors alone), and Table 2's Spearman of the rank labels with the re-annotated labels,
    # ×100, at best_k and without clustering (None: undefined, e.g. one label throughout).
    all_flagged: Scores | None = None
    spearman: float | None = None
    spearman_no_cluster: float | None = None

    @property
    def best_test_k(self) -> int:
        """The K of best F1 on the held-out half itself (the smallest among equals): an optimistic reading only."""
        return max(self.test_f1_by_k, key=lambda k: (self.test_f1_by_k[k], -k))


def proportions(distribution: str, fit: Sequence[Item]) -> tuple[float, ...]:
    """Share of each label 1-5: even (20% each), or as the fitting half's original or re-annotated labels fall."""
    if distribution == "even":
        return (0.2,) * 5
    if distribution not in DISTRIBUTIONS:
        raise HarnessError(f"unknown distribution {distribution!r}; choose from {', '.join(DISTRIBUTIONS)}")
    if not fit:
        raise HarnessError("no instances to take a label distribution from")
    labels = [i.original if distribution == "original" else i.reannotated for i in fit]
    return tuple(labels.count(label) / len(labels) for label in LABELS)


def rank_labels(cosines: Sequence[float], props: Sequence[float], keys: Sequence[str] | None = None) -> list[int]:
    """Rank labels of one group: sorted by cosine (ties by key), the i-th of n gets the label whose cumulative
    share first exceeds the midpoint (i + 0.5) / n; with 20% each, the lowest fifth is 1 and the highest 5."""
    n = len(cosines)
    keys = list(keys) if keys is not None else [f"{i:012d}" for i in range(n)]
    order = sorted(range(n), key=lambda i: (cosines[i], keys[i]))
    bounds = np.cumsum(np.asarray(props, dtype=float))[:-1]
    out = [0] * n
    for position, i in enumerate(order):
        out[i] = 1 + int(np.sum(bounds < (position + 0.5) / n))
    return out


def scores(predicted: Sequence[bool], actual: Sequence[bool]) -> Scores:
    """Precision, recall and F1 of the error candidates; 0.0 where a ratio has no denominator."""
    tp = sum(p and a for p, a in zip(predicted, actual, strict=True))
    fp = sum(p and not a for p, a in zip(predicted, actual, strict=True))
    fn = sum(a and not p for p, a in zip(predicted, actual, strict=True))
    tn = len(predicted) - tp - fp - fn
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return Scores(precision, recall, f1, tp, fp, fn, tn)


def halves(uids: Sequence[str], seed: int = 0) -> tuple[frozenset[str], frozenset[str]]:
    """(fit, test): uids ordered by a hash of (seed, uid), the first half (rounded up) fits, the rest is scored."""
    ranked = sorted(uids, key=lambda u: hashlib.sha256(f"{seed}\x1f{u}".encode()).hexdigest())
    cut = (len(ranked) + 1) // 2
    return frozenset(ranked[:cut]), frozenset(ranked[cut:])


def centroids(vectors: np.ndarray, k: int, seed: int) -> np.ndarray:
    """k-means centroids (scipy's kmeans2, k-means++ start, fixed seed); K = 1 is the mean."""
    if k == 1:
        return vectors.mean(axis=0, keepdims=True)
    from scipy.cluster.vq import kmeans2

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "One of the clusters is empty": an empty cluster simply gets nobody
        found, _ = kmeans2(vectors, k, minit="++", seed=seed)
    return np.asarray(found)


def assign(vectors: np.ndarray, cents: np.ndarray) -> list[int]:
    """Nearest centroid of each vector (Euclidean; ties to the lower index)."""
    d = ((vectors[:, None, :] - cents[None, :, :]) ** 2).sum(axis=2)
    return [int(c) for c in d.argmin(axis=1)]


def label_items(items: Sequence[Item], clusters: Sequence[int], props: Sequence[float]) -> list[int]:
    """Rank labels of every item, ranked within its own cluster."""
    out = [0] * len(items)
    for c in sorted(set(clusters)):
        members = [i for i, ci in enumerate(clusters) if ci == c]
        labels = rank_labels([items[i].cosine for i in members], props, [items[i].uid for i in members])
        for i, label in zip(members, labels, strict=True):
            out[i] = label
    return out


def evaluate(items: Sequence[Item], cents: np.ndarray, props: Sequence[float]) -> tuple[Scores, list[int], list[int]]:
    """Scores of items clustered by the given centroids; also their clusters and rank labels."""
    vectors = np.asarray([i.pair_vector for i in items], dtype=float)
    clusters = assign(vectors, cents)
    labels = label_items(items, clusters, props)
    predicted = [label != i.original for i, label in zip(items, labels, strict=True)]
    return scores(predicted, [i.is_error for i in items]), clusters, labels


def identify(items: Sequence[Item], distribution: str, k_max: int = 20, seed: int = 0) -> Result:
    """Fit on one half (distribution, centroids, the K of best F1 among 1..k_max), score the other half."""
    if k_max < 1:
        raise HarnessError(f"--k-max must be at least 1, got {k_max}")
    fit_ids, _ = halves([i.uid for i in items], seed)
    fit = [i for i in items if i.uid in fit_ids]
    test = [i for i in items if i.uid not in fit_ids]
    if len(fit) < 1 or len(test) < 1:
        raise HarnessError(f"error identification needs at least 2 instances with answers, got {len(items)}")
    props = proportions(distribution, fit)
    fit_vectors = np.asarray([i.pair_vector for i in fit], dtype=float)
    fit_f1, test_f1, cents_by_k = {}, {}, {}
    for k in range(1, min(k_max, len(fit)) + 1):
        cents = centroids(fit_vectors, k, seed)
        cents_by_k[k] = cents
        fit_f1[k] = evaluate(fit, cents, props)[0].f1
        test_f1[k] = evaluate(test, cents, props)[0].f1
    best_k = max(fit_f1, key=lambda k: (fit_f1[k], -k))  # the smallest K among equals
    test_scores, clusters, labels = evaluate(test, cents_by_k[best_k], props)
    rows = [
        {
            "uid": i.uid,
            "cluster": c,
            "cosine": round(i.cosine, 6),
            "rank_label": label,
            "original": i.original,
            "reannotated": i.reannotated,
            "candidate": label != i.original,
            "error": i.is_error,
        }
        for i, c, label in zip(test, clusters, labels, strict=True)
    ]
    no_cluster, _, flat = evaluate(test, cents_by_k[1], props)
    every = scores([True] * len(test), [i.is_error for i in test])
    truth = [i.reannotated for i in test]
    rho, rho_flat = spearman(labels, truth), spearman(flat, truth)
    return Result(distribution, props, best_k, fit_f1, test_scores, no_cluster, test_f1, rows, every, rho, rho_flat)
