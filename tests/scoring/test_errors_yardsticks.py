"""The yardsticks printed beside error identification's F1: the F1 of flagging every held-out instance, Table 2's
Spearman of the rank labels with the re-annotated labels, and the best K on the held-out half itself; checked
against sklearn and scipy."""

from __future__ import annotations

import random

import pytest
from scipy.stats import spearmanr
from sklearn.metrics import f1_score, precision_score

from harness.scoring.errors import Item, identify


def _items(n: int = 80, seed: int = 5) -> list[Item]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        original, topic = rng.randint(1, 5), rng.random() < 0.5
        reannotated = original if rng.random() < 0.4 else rng.randint(1, 5)
        vec = (10.0 + rng.random(), 0.0) if topic else (0.0, 10.0 + rng.random())
        out.append(Item(f"u{i:03d}", rng.random() + 0.1 * reannotated, vec, original, reannotated))
    return out


@pytest.mark.parametrize("distribution", ["even", "original", "reannotated"])
def test_every_instance_flagged_and_spearman_as_sklearn_and_scipy_compute_them(distribution: str) -> None:
    items = _items()
    result = identify(items, distribution, k_max=6, seed=0)
    held_out = {r["uid"] for r in result.rows}
    errors = [i.is_error for i in items if i.uid in held_out]
    every = result.all_flagged
    assert every is not None
    assert every.f1 == pytest.approx(f1_score(errors, [True] * len(errors)))
    assert every.precision == pytest.approx(precision_score(errors, [True] * len(errors))) and every.recall == 1.0
    rank = [r["rank_label"] for r in result.rows]
    truth = [r["reannotated"] for r in result.rows]
    assert result.spearman == pytest.approx(100 * spearmanr(rank, truth).statistic)


def test_spearman_without_clusters_uses_the_k1_rank_labels() -> None:
    items = _items(seed=9)
    result = identify(items, "even", k_max=1, seed=0)  # K = 1 only: clustered and unclustered are the same
    assert result.best_k == 1 and result.spearman == result.spearman_no_cluster
    truth = [r["reannotated"] for r in result.rows]
    assert result.spearman_no_cluster == pytest.approx(
        100 * spearmanr([r["rank_label"] for r in result.rows], truth).statistic
    )


def test_the_best_k_on_the_held_out_half_is_read_from_its_own_f1s() -> None:
    result = identify(_items(seed=11), "reannotated", k_max=8, seed=0)
    f1 = result.test_f1_by_k
    assert result.best_test_k == min(k for k in f1 if f1[k] == max(f1.values()))
