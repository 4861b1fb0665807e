"""Error identification's pure parts (harness/scoring/errors.py): hand-computed ranks, an independent P/R/F1."""

from __future__ import annotations

import random

import numpy as np
import pytest

from harness.scoring.errors import Item, centroids, evaluate, halves, identify, proportions, rank_labels, scores
from harness.types import HarnessError

EVEN = (0.2,) * 5


@pytest.mark.parametrize(
    ("cosines", "props", "keys", "expected"),
    [
        ([0.9, 0.1, 0.5, 0.3, 0.7], EVEN, None, [5, 1, 3, 2, 4]),  # one per fifth
        ([i / 10 for i in range(10)], EVEN, None, [1, 1, 2, 2, 3, 3, 4, 4, 5, 5]),
        ([4.0, 3.0, 2.0, 1.0], (0.5, 0, 0, 0, 0.5), None, [5, 5, 1, 1]),  # empty labels are skipped
        ([0.3], EVEN, None, [3]),  # one item: the middle of the distribution
        ([0.5, 0.5], EVEN, ["b", "a"], [4, 2]),  # a tie: by key, "a" ranks lower
        ([0.1, 0.9, 0.5], (0, 0, 1, 0, 0), None, [3, 3, 3]),  # all mass on 3
        ([0.1, 0.2, 0.3, 0.4], (0.25, 0.25, 0, 0, 0.5), None, [1, 2, 5, 5]),
        ([], EVEN, None, []),
    ],
)
def test_rank_labels(
    cosines: list[float], props: tuple[float, ...], keys: list[str] | None, expected: list[int]
) -> None:
    assert rank_labels(cosines, props, keys) == expected


def _item(uid: str, cosine: float = 0.0, original: int = 3, reannotated: int = 3, vec: tuple = (0.0,)) -> Item:
    return Item(uid, cosine, vec, original, reannotated)


@pytest.mark.parametrize(
    ("distribution", "labels", "expected"),
    [
        ("even", [(1, 1)], EVEN),
        ("original", [(1, 5), (1, 5), (2, 5), (5, 5)], (0.5, 0.25, 0.0, 0.0, 0.25)),
        ("reannotated", [(1, 3), (1, 3), (2, 4), (5, 4)], (0.0, 0.0, 0.5, 0.5, 0.0)),
    ],
)
def test_proportions(distribution: str, labels: list[tuple[int, int]], expected: tuple[float, ...]) -> None:
    items = [_item(str(i), original=o, reannotated=r) for i, (o, r) in enumerate(labels)]
    assert proportions(distribution, items) == pytest.approx(expected)


def test_unknown_distribution_is_one_line() -> None:
    with pytest.raises(HarnessError, match="unknown distribution 'zipf'"):
        proportions("zipf", [_item("0")])


@pytest.mark.parametrize(
    ("predicted", "actual", "expected"),
    [
        ([True, True, False, False], [True, False, True, False], (0.5, 0.5, 0.5)),
        ([True, True, True, False], [True, True, False, False], (2 / 3, 1.0, 0.8)),
        ([False, False], [True, False], (0.0, 0.0, 0.0)),  # nothing flagged: no precision, no F1
        ([True], [True], (1.0, 1.0, 1.0)),
    ],
)
def test_scores_by_hand(predicted: list[bool], actual: list[bool], expected: tuple[float, float, float]) -> None:
    s = scores(predicted, actual)
    assert (s.precision, s.recall, s.f1) == pytest.approx(expected)
    assert s.tp + s.fp + s.fn + s.tn == len(predicted)


def test_scores_match_a_set_computation_on_random_draws() -> None:
    rng = random.Random(7)
    for _ in range(200):
        n = rng.randint(1, 30)
        predicted = [rng.random() < 0.5 for _ in range(n)]
        actual = [rng.random() < 0.5 for _ in range(n)]
        flagged = {i for i in range(n) if predicted[i]}
        errors = {i for i in range(n) if actual[i]}
        p = len(flagged & errors) / len(flagged) if flagged else 0.0
        r = len(flagged & errors) / len(errors) if errors else 0.0
        f = 2 * p * r / (p + r) if p + r else 0.0
        s = scores(predicted, actual)
        assert (s.precision, s.recall, s.f1) == pytest.approx((p, r, f))


def test_halves_are_disjoint_stable_and_cover_every_uid() -> None:
    uids = [str(i) for i in range(11)]
    fit, test = halves(uids, seed=0)
    assert fit | test == set(uids) and not fit & test and len(fit) == 6
    assert halves(list(reversed(uids)), seed=0) == (fit, test)
    assert halves(uids, seed=1) != (fit, test)


def _two_topics(n: int = 40) -> list[Item]:
    """Two topics (identical pair vectors within each); in each half, each topic's lower-cosine half was
    re-annotated 1 and its upper half 5; every original label is 5. Ranked within topics, with half the mass on
    1 and half on 5, the rank labels are the re-annotated ones exactly; ranked all together they are not."""
    uids = [f"u{i:02d}" for i in range(n)]
    fit, test = halves(uids, seed=0)
    items = []
    for part in (sorted(fit), sorted(test)):
        assert len(part) % 4 == 0
        for j, uid in enumerate(part):
            topic = j % 2
            rank = j // 2  # 0 .. len(part)/2 - 1 within its topic
            per_topic = len(part) // 2
            cosine = (0.8 if topic == 0 else 0.1) + 0.001 * rank
            label = 1 if rank < per_topic // 2 else 5
            items.append(Item(uid, cosine, (10.0, 0.0) if topic == 0 else (0.0, 10.0), 5, label))
    return items


def test_clustering_finds_the_topics_and_is_chosen_on_the_fitting_half() -> None:
    result = identify(_two_topics(), "reannotated", k_max=4, seed=0)
    assert result.proportions == pytest.approx((0.5, 0, 0, 0, 0.5))
    assert result.best_k == 2 and result.fit_f1_by_k[2] == 1.0
    assert (result.test.precision, result.test.recall, result.test.f1) == (1.0, 1.0, 1.0)
    # No clustering (hand-computed): the low-cosine topic is all 1s (5 of its 10 are errors), the other all 5s.
    nc = result.no_cluster
    assert (nc.tp, nc.fp, nc.fn, nc.tn) == (5, 5, 5, 5) and nc.f1 == pytest.approx(0.5)
    assert result.fit_f1_by_k[1] == pytest.approx(0.5)
    rows = result.rows
    assert len(rows) == 20 and all(r["rank_label"] == r["reannotated"] for r in rows)
    assert all(r["candidate"] == (r["rank_label"] != r["original"]) for r in rows)


def test_all_mass_on_one_label_flags_exactly_the_other_originals() -> None:
    rng = random.Random(3)
    items = [_item(f"{i}", rng.random(), rng.randint(1, 5), 3, (rng.random(), rng.random())) for i in range(30)]
    result = identify(items, "reannotated", k_max=5, seed=0)
    assert result.best_k == 1  # every K scores 1.0 on the fitting half: the smallest wins
    assert result.test.f1 == 1.0 and all(r["rank_label"] == 3 for r in result.rows)


def test_evaluate_ranks_within_the_nearest_centroid() -> None:
    items = [
        _item("a", 0.1, 5, 5, (0.0,)), _item("b", 0.2, 5, 5, (0.0,)),
        _item("c", 0.8, 1, 1, (9.0,)), _item("d", 0.9, 1, 1, (9.0,)),
    ]  # fmt: skip
    s, clusters, labels = evaluate(items, np.asarray([[0.0], [10.0]]), (0.5, 0, 0, 0, 0.5))
    assert clusters == [0, 0, 1, 1] and labels == [1, 5, 1, 5]
    assert (s.tp, s.fp, s.fn, s.tn) == (0, 2, 0, 2)


def test_kmeans_is_seeded() -> None:
    rng = np.random.default_rng(0)
    v = rng.normal(size=(50, 3))
    assert np.array_equal(centroids(v, 4, seed=5), centroids(v, 4, seed=5))
    assert centroids(v, 1, seed=5) == pytest.approx(v.mean(axis=0, keepdims=True))


@pytest.mark.parametrize("k_max", [0, -1])
def test_k_max_below_one_is_refused(k_max: int) -> None:
    with pytest.raises(HarnessError, match="--k-max must be at least 1"):
        identify([_item("0"), _item("1")], "even", k_max=k_max)
