"""Agreement statistics checked against published worked examples we did not compute."""

from __future__ import annotations

import krippendorff
import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from harness.scoring.agreement import PUBLISHED, Statistic, agreement, cohen_kappa, krippendorff_alpha, spearman

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", the 4 observers x 12 units example (also on
# Wikipedia's "Krippendorff's alpha" page): ordinal 0.815, interval 0.849 (nominal 0.743, ratio 0.797).
KRIPPENDORFF_2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]


def test_alpha_reproduces_krippendorffs_worked_example() -> None:
    ordinal = krippendorff_alpha(KRIPPENDORFF_2011, "ordinal")
    interval = krippendorff_alpha(KRIPPENDORFF_2011, "interval")
    assert round(ordinal.value, 3) == 0.815  # type: ignore[arg-type]
    assert round(interval.value, 3) == 0.849  # type: ignore[arg-type]
    assert ordinal.n == 11  # unit 12 has one value only: it pairs with nothing
    assert ordinal.note == "only 11 items: a wide uncertainty"


def test_alpha_needs_two_repeats_and_some_variation() -> None:
    assert krippendorff_alpha([[1, 2, 3]], "ordinal").note == "needs at least 2 repeats (--repeats)"
    same = krippendorff_alpha([[4, 4, None], [4, 4, 4]], "interval")
    assert same.value is None and same.note == "every rating is 4: alpha is undefined"
    assert krippendorff_alpha([[1, None], [None, 2]], "ordinal").note == "no item has two valid ratings"


def _table(yes_yes: int, yes_no: int, no_yes: int, no_no: int) -> tuple[list[int], list[int]]:
    """Two raters' labels from a 2x2 table (rater A's answer first); yes = 5, no = 1."""
    cells = [(5, 5, yes_yes), (5, 1, yes_no), (1, 5, no_yes), (1, 1, no_no)]
    a = [x for x, _, n in cells for _ in range(n)]
    b = [y for _, y, n in cells for _ in range(n)]
    return a, b


@pytest.mark.parametrize(
    ("table", "kappa"),
    [
        ((20, 5, 10, 15), 0.4),  # Wikipedia, "Cohen's kappa", simple example: p_o 0.7, p_e 0.5
        ((45, 15, 25, 15), 0.1304),  # Wikipedia, same percentages but different numbers, first table
        ((25, 35, 5, 35), 0.2593),  # ... second table
    ],
)
def test_kappa_reproduces_wikipedias_worked_examples(table: tuple[int, int, int, int], kappa: float) -> None:
    a, b = _table(*table)
    assert round(cohen_kappa(a, b).value, 4) == kappa  # type: ignore[arg-type]


def test_kappa_is_unweighted_a_near_miss_counts_as_a_miss() -> None:
    # Off by one or by four: the same disagreement for the unweighted kappa (a weighted one would differ).
    near = cohen_kappa([1, 2, 3, 4, 5] * 8, [2, 3, 4, 5, 4] * 8).value
    far = cohen_kappa([1, 2, 3, 4, 5] * 8, [5, 5, 1, 1, 1] * 8).value
    assert near is not None and far is not None and near < 0 and far < 0
    assert cohen_kappa([1, 2, 3, 4, 5] * 8, [1, 2, 3, 4, 5] * 8).value == 1.0


def test_kappa_undefined_and_mismatched() -> None:
    assert cohen_kappa([3, 3], [3, 3]).value is None
    assert cohen_kappa([], []).note == "no item rated by both"
    with pytest.raises(ValueError):
        cohen_kappa([1], [1, 2])


def test_spearman_notes_where_it_cannot_be_read() -> None:
    assert spearman([1, 2], [1, 2]).note == "only 2 items"
    assert spearman([1, 2, 3], [4, 4, 4]).note == "one side is constant: rho is undefined"
    assert spearman([1, 2, 3, 4], [1, 3, 2, 4]).value == pytest.approx(0.8)  # 1 - 6*2/(4*15)


def test_agreement_pairs_labels_with_each_reference_on_shared_uids() -> None:
    ratings = [[5, 1, 3, None], [5, 2, 3, 4]]
    labels = {"0": 5, "1": 2, "2": 3, "3": 4}
    original = {"0": 5.0, "1": 1.0, "2": 3.0, "3": 4.0}
    tu = {"0": 5.0, "1": None, "2": 3.0}  # uid 1 invalid in Tu et al., uid 3 not in it
    out = agreement(ratings, labels, original, tu)
    assert out["kappa_vs_original"]["n"] == 4 and out["kappa_vs_tu2024"]["n"] == 2
    assert out["spearman_vs_tu2024"]["value"] is None and out["alpha_ordinal"]["n"] == 3
    assert agreement(ratings, labels, original, None)["kappa_vs_tu2024"]["note"].startswith("Tu et al.'s labels")


# Values against implementations we did not write: scikit-learn's cohen_kappa_score, pandas' rank correlation, the
# krippendorff package called directly (the wrapper's layout: rows are repeats, None missing, the 1-5 domain).


def _ratings(seed: int, n: int) -> tuple[list[int], list[int]]:
    """Two raters on the 1-5 scale who agree about half the time."""
    rng = np.random.default_rng(seed)
    a = rng.integers(1, 6, n)
    b = np.where(rng.random(n) < 0.5, a, rng.integers(1, 6, n))
    return [int(x) for x in a], [int(x) for x in b]


@pytest.mark.parametrize(("seed", "n"), [(0, 5), (1, 29), (2, 30), (3, 200)])
def test_kappa_matches_scikit_learn(seed: int, n: int) -> None:
    a, b = _ratings(seed, n)
    got = cohen_kappa(a, b)
    assert got.value == pytest.approx(cohen_kappa_score(a, b), abs=1e-12) and got.n == n
    assert got.note == (f"only {n} items: a wide uncertainty" if n < 30 else None)  # FEW: 29 noted, 30 not


def test_kappa_counts_a_label_outside_the_scale_as_a_category() -> None:
    a, b = [0, 1, 2, 3, 0, 1, 2, 3], [0, 1, 2, 2, 1, 1, 2, 3]
    assert cohen_kappa(a, b).value == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)


@pytest.mark.parametrize("seed", [4, 5, 6])
@pytest.mark.parametrize("level", ["ordinal", "interval"])
def test_alpha_matches_the_krippendorff_package_with_missing_ratings(seed: int, level: str) -> None:
    rng = np.random.default_rng(seed)
    ratings: list[list[int | None]] = [
        [None if rng.random() < 0.2 else int(v) for v in rng.integers(1, 6, 40)] for _ in range(3)
    ]
    data = np.array([[np.nan if r is None else r for r in row] for row in ratings], dtype=float)
    domain = [1, 2, 3, 4, 5] if level == "ordinal" else None
    want = krippendorff.alpha(reliability_data=data, level_of_measurement=level, value_domain=domain)
    got = krippendorff_alpha(ratings, level)  # type: ignore[arg-type]
    assert got.value == pytest.approx(want, abs=1e-12)
    assert got.n == int(np.sum(np.sum(~np.isnan(data), axis=0) >= 2)) and got.note is None  # 40 columns, 30+


def test_alpha_over_two_values_is_defined() -> None:
    ratings = [[1, 2, 2, 1, 2], [1, 2, 1, 1, 2]]  # only 1s and 2s: variation enough to measure agreement against
    want = krippendorff.alpha(reliability_data=np.array(ratings, dtype=float), level_of_measurement="interval")
    assert krippendorff_alpha(ratings, "interval").value == pytest.approx(want, abs=1e-12)  # type: ignore[arg-type]


def test_what_an_undefined_alpha_rests_on() -> None:
    assert krippendorff_alpha([[1, 2, 3]], "ordinal") == Statistic(None, 3, "needs at least 2 repeats (--repeats)")
    assert krippendorff_alpha([], "ordinal") == Statistic(None, 0, "needs at least 2 repeats (--repeats)")
    assert krippendorff_alpha([[1, None], [None, 2]], "interval") == Statistic(None, 0, "no item has two valid ratings")


def test_kappa_and_spearman_without_items() -> None:
    assert cohen_kappa([], []) == Statistic(None, 0, "no item rated by both")
    assert spearman([1.0, 2.0], [2.0, 1.0]) == Statistic(None, 2, "only 2 items")
    constant = Statistic(None, 3, "one side is constant: rho is undefined")
    assert spearman([4.0, 4.0, 4.0], [1.0, 2.0, 3.0]) == spearman([1.0, 2.0, 3.0], [4.0, 4.0, 4.0]) == constant


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ([1, 1, 2, 2], [1, 2, 1, 2]),  # two values a side: defined (rho 0)
        ([1, 2, 2, 1, 2], [1, 2, 3, 4, 5]),
        ([5, 4, 3], [1, 2, 2]),  # three items: the fewest with a rho
    ],
)
def test_spearman_matches_pandas(a: list[float], b: list[float]) -> None:
    got = spearman(a, b)
    assert got.value == pytest.approx(pd.Series(a).corr(pd.Series(b), method="spearman"), abs=1e-12)
    assert got.n == len(a) and got.note == f"only {len(a)} items: a wide uncertainty"


def test_a_record_rounds_to_six_places() -> None:
    assert Statistic(0.12345649, 40).record() == {"value": 0.123456, "n": 40, "note": None}
    assert Statistic(None, 3, "why").record() == {"value": None, "n": 3, "note": "why"}


def test_agreement_rounds_the_other_sets_labels_and_matches_the_libraries() -> None:
    a, b = _ratings(7, 60)
    labels: dict[str, int | None] = {str(i): v for i, v in enumerate(a)}
    original: dict[str, float | None] = {str(i): v - 0.4 for i, v in enumerate(b)}  # rounds back to b
    original["0"] = 2.6 if b[0] != 3 else 3.6  # rounded, not cut: 3 (or 4)
    b[0] = round(original["0"])  # type: ignore[arg-type]
    out = agreement([a, b], labels, original, None, "no reference here")
    assert out["kappa_vs_original"]["value"] == pytest.approx(cohen_kappa_score(a, b), abs=1e-6)
    rho = pd.Series(a).corr(pd.Series(b), method="spearman")
    assert out["spearman_vs_original"]["value"] == pytest.approx(rho, abs=1e-6)
    assert out["kappa_vs_tu2024"] == out["spearman_vs_tu2024"] == {"value": None, "n": 0, "note": "no reference here"}


def test_the_published_figures_are_zhang_et_al_s() -> None:
    # Zhang et al. 2025, §3: alpha 0.865 (5 repeats, Claude-3.7-Sonnet), kappa 0.247 (Train-Orig vs Train-Mod-Reanno)
    assert PUBLISHED == {"alpha": 0.865, "kappa_vs_original": 0.247}
