"""Agreement of re-annotated labels (Zhang et al. 2025, §3), pure: repeat-run Krippendorff's alpha, Cohen's kappa
against the original labels, Spearman against another label set.

Zhang et al. report alpha 0.865 over five repeats of 100 training rows (Claude-3.7-Sonnet), citing Hayes and
Krippendorff (2007) without naming the level of measurement; the ratings are on an ordinal 1-5 scale (their §1),
so both the ordinal and the interval alpha are reported (the `krippendorff` package's default is interval). Their
kappa (0.247, Train-Orig vs Train-Mod-Reanno) cites Cohen (1960), "a coefficient of agreement for nominal scales":
the unweighted kappa, which is what `cohen_kappa` computes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

SCALE = (1, 2, 3, 4, 5)
FEW = 30  # fewer items than this: a statistic is shown with a note, its uncertainty is wide


@dataclass(frozen=True)
class Statistic:
    """A value with the number of items it rests on and, where it could mislead, why (shown beside it)."""

    value: float | None
    n: int
    note: str | None = None

    def record(self) -> dict[str, Any]:
        return {"value": None if self.value is None else round(self.value, 6), "n": self.n, "note": self.note}


def _few(n: int) -> str | None:
    return f"only {n} items: a wide uncertainty" if n < FEW else None


def krippendorff_alpha(ratings: Sequence[Sequence[float | None]], level: Literal["ordinal", "interval"]) -> Statistic:
    """Alpha of repeated ratings: one row per repeat, one column per item, None where a repeat gave no valid
    rating (a missing value, as Krippendorff's alpha allows). `level`: "ordinal" or "interval"."""
    import krippendorff
    import numpy as np

    if len(ratings) < 2:
        return Statistic(None, len(ratings[0]) if ratings else 0, "needs at least 2 repeats (--repeats)")
    data = np.array([[np.nan if r is None else float(r) for r in row] for row in ratings], dtype=float)
    pairable = int(np.sum(np.sum(~np.isnan(data), axis=0) >= 2))  # items rated validly by at least two repeats
    if pairable == 0:
        return Statistic(None, 0, "no item has two valid ratings")
    values = set(data[~np.isnan(data)].tolist())
    if len(values) < 2:
        # Every rating the same: no disagreement and no variation to measure it against (0/0).
        return Statistic(None, pairable, f"every rating is {values.pop():g}: alpha is undefined")
    domain = list(SCALE) if level == "ordinal" else None
    value = float(krippendorff.alpha(reliability_data=data, value_domain=domain, level_of_measurement=level))
    return Statistic(value, pairable, _few(pairable))


def cohen_kappa(a: Sequence[int], b: Sequence[int], categories: Sequence[int] = SCALE) -> Statistic:
    """Unweighted Cohen's kappa (Cohen 1960) of two ratings of the same items: (p_o - p_e) / (1 - p_e), p_e from
    the two raters' marginal shares. None where the chance agreement is already 1 (both always said the same)."""
    if len(a) != len(b):
        raise ValueError(f"kappa needs two ratings of the same items, got {len(a)} and {len(b)}")
    n = len(a)
    if n == 0:
        return Statistic(None, 0, "no item rated by both")
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    cats = sorted(set(categories) | set(a) | set(b))
    expected = sum((a.count(c) / n) * (b.count(c) / n) for c in cats)
    if math.isclose(expected, 1.0):
        return Statistic(None, n, "both raters gave one and the same label to every item: kappa is undefined")
    return Statistic((observed - expected) / (1 - expected), n, _few(n))


def spearman(a: Sequence[float], b: Sequence[float]) -> Statistic:
    """Spearman's rho (scipy) of two ratings of the same items; None below 3 items or with a constant side."""
    from scipy.stats import spearmanr

    n = len(a)
    if n < 3:
        return Statistic(None, n, f"only {n} items")
    if len(set(a)) < 2 or len(set(b)) < 2:
        return Statistic(None, n, "one side is constant: rho is undefined")
    return Statistic(float(spearmanr(a, b).statistic), n, _few(n))


# Zhang et al. 2025's figures, set beside ours: §3 (alpha: 5 repeats of 100 Train-Mod rows, Claude-3.7-Sonnet;
# kappa: Train-Orig vs Train-Mod-Reanno, the mean of human, GPT-4o and Claude ratings, rounded).
PUBLISHED = {"alpha": 0.865, "kappa_vs_original": 0.247}


def paired(labels: Mapping[str, int | None], other: Mapping[str, float | None]) -> tuple[list[int], list[int]]:
    """The labels and the other set's (rounded to the scale's integers) on the uids both have."""
    uids = [u for u, v in labels.items() if v is not None and other.get(u) is not None]
    return [int(labels[u]) for u in uids], [round(float(other[u])) for u in uids]  # type: ignore[arg-type]


def agreement(
    ratings: Sequence[Sequence[int | None]],
    labels: Mapping[str, int | None],
    original: Mapping[str, float | None],
    reference: Mapping[str, float | None] | None,
    why_no_reference: str = "Tu et al.'s labels cover the C-STS validation split only",
) -> dict[str, Any]:
    """Repeat-run alpha (ordinal and interval), and kappa and Spearman of the labels against the original labels
    and against a reference set (Tu et al.'s re-annotation; None: not comparable, `why_no_reference` says why)."""
    out: dict[str, Any] = {
        "alpha_ordinal": krippendorff_alpha(ratings, "ordinal").record(),
        "alpha_interval": krippendorff_alpha(ratings, "interval").record(),
    }
    sets = {"original": original, "tu2024": reference}
    for name, other in sets.items():
        if other is None:
            missing = Statistic(None, 0, why_no_reference).record()
            out[f"kappa_vs_{name}"] = out[f"spearman_vs_{name}"] = missing
            continue
        a, b = paired(labels, other)
        out[f"kappa_vs_{name}"] = cohen_kappa(a, b).record()
        out[f"spearman_vs_{name}"] = spearman([float(x) for x in a], [float(x) for x in b]).record()
    return out
