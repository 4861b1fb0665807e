"""Agreement statistics checked against published worked examples we did not compute."""

from __future__ import annotations

import pytest

from harness.scoring.agreement import agreement, cohen_kappa, krippendorff_alpha, spearman

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
