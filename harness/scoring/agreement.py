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


@dataclass(frozen=True)
class Setup:
    """What an agreement figure rests on, to judge it against the paper's: the models whose ratings made the labels
    (one for `reannotate`, two for `reannotate-merge`), repeats per rating, the split and its size, how the rows were
    chosen ("all", "first" N, a seeded "sample"), the rows, the temperature, whether the original label was averaged
    in, and who rewrote the conditions (None: the original conditions)."""

    models: tuple[str, ...]
    repeats: int
    split: str
    split_rows: int
    chosen: str
    rows: int
    temperature: float
    with_original: bool
    rewritten_by: str | None


# The models Zhang et al. name, as ids begin (the paper names no dated snapshot): GPT-4o (not -mini), Claude-3.7-Sonnet
PAPER_MODELS = {"GPT-4o": ("gpt-4o", ("gpt-4o-mini",)), "Claude-3.7-Sonnet": ("claude-3-7-sonnet", ())}


def paper_model(model_id: str) -> str | None:
    """The paper's name for `model_id` (PAPER_MODELS), or None."""
    m = model_id.lower().rsplit("/", 1)[-1]
    for name, (prefix, other) in PAPER_MODELS.items():
        if m.startswith(prefix) and not m.startswith(other):
            return name
    return None


def _conditions(s: Setup) -> list[str]:
    """Both figures rest on Train-Mod: conditions rewritten by GPT-4o (§2.1)."""
    if s.rewritten_by is None:
        return ["conditions=original (paper: rewritten by GPT-4o, Train-Mod)"]
    if paper_model(s.rewritten_by) != "GPT-4o":
        return [f"conditions rewritten by {s.rewritten_by} (paper: GPT-4o)"]
    return []


def judge_alpha(s: Setup) -> str:
    """Alpha 0.865 (§3): Claude-3.7-Sonnet rating a random 100 of Train-Mod's rows five times each."""
    why = []
    if [paper_model(m) for m in s.models] != ["Claude-3.7-Sonnet"]:
        why.append(f"model={', '.join(s.models)} (paper: Claude-3.7-Sonnet)")
    if s.repeats != 5:
        why.append(f"repeats={s.repeats} (paper: 5)")
    if s.split != "train":
        why.append(f"split={s.split} (paper: train)")
    if s.chosen != "sample" or s.rows != 100:
        why.append(f"rows={_rows(s)} (paper: a random 100)")
    why += _conditions(s)
    return _verdict(why, s, "Claude-3.7-Sonnet, 5 repeats of a random 100 train rows, GPT-4o's conditions")


def judge_kappa(s: Setup) -> str:
    """Kappa 0.247 (§3): Train-Orig against Train-Mod-Reanno, every train row labelled V(human + GPT-4o + Claude)."""
    why = []
    names = sorted(str(paper_model(m)) for m in s.models)
    if names != ["Claude-3.7-Sonnet", "GPT-4o"] or not s.with_original:
        ours = " + ".join(["human"] * s.with_original + list(s.models))
        why.append(f"labels=V({ours}) (paper: V(human + GPT-4o + Claude-3.7-Sonnet), reannotate-merge)")
    if s.repeats != 1:
        why.append(f"repeats={s.repeats} (paper: one rating per model, §2.2)")
    if s.split != "train":
        why.append(f"split={s.split} (paper: train)")
    if s.chosen != "all" or s.rows != s.split_rows:
        why.append(f"rows={_rows(s)} (paper: all {s.split_rows:,})")
    why += _conditions(s)
    return _verdict(why, s, "every train row, V(human + GPT-4o + Claude-3.7-Sonnet), GPT-4o's conditions")


def _rows(s: Setup) -> str:
    how = {"sample": "a seeded sample", "first": "the first rows", "all": "all"}.get(s.chosen, s.chosen)
    return f"{s.rows:,} ({how})"


def _verdict(why: list[str], s: Setup, shared: str) -> str:
    """As a run's: "comparable (...)" naming what it shares, or "not comparable (reasons)". The paper states no
    temperature: ours is said either way, never a reason."""
    unstated = f"temperature {s.temperature:g}: the paper states none"
    if why:
        return f"not comparable ({'; '.join([*why, unstated])})"
    return f"comparable ({shared}; {unstated})"
