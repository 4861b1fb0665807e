"""Which of a report's comparable cells differ from the published number beyond chance, with the family of cells
controlled: a report beside a paper's table sets 9 to 27 of our numbers against the paper's, and at 5 % each, one
or more would be flagged by chance alone. Each cell's p (harness/scoring/stats.py `p_against`: our Spearman's
bootstrap interval against the published value) is adjusted by Benjamini–Hochberg over every comparable cell of the
report (scipy.stats.false_discovery_control; statsmodels, which also has Holm's, is not a dependency), and a cell
is flagged where the adjusted p (q) is below 5 %: at most 5 % of the flags are expected to be false on average.
"""

from __future__ import annotations

import math

import pandas as pd

from harness.scoring.stats import p_against

METHOD = "Benjamini–Hochberg"
ALPHA = 0.05


def flag_differences(table: pd.DataFrame) -> pd.DataFrame:
    """Add paper_p, paper_q (the adjusted p) and paper_differs to each comparable row (a Δ shown); the family's
    size is in table.attrs["significance"]. Rows that are not comparable get None in all three."""
    from scipy.stats import false_discovery_control

    table = table.copy()
    ps: list[float | None] = [
        p_against(_num(r.spearman), _num(r.spearman_lo), _num(r.spearman_hi), float(r.paper_spearman))
        if _num(getattr(r, "diff_spearman", None)) is not None
        else None
        for r in table.itertuples()
    ]
    family = [p for p in ps if p is not None]
    adjusted = iter(false_discovery_control(family, method="bh").tolist() if family else [])
    qs = [next(adjusted) if p is not None else None for p in ps]
    table["paper_p"], table["paper_q"] = ps, qs
    table["paper_differs"] = [None if q is None else q < ALPHA for q in qs]
    table.attrs["significance"] = {"method": METHOD, "alpha": ALPHA, "family": len(family)}
    return table


def describe(table: pd.DataFrame) -> str:
    """The sentence under the published numbers that names the method and the family."""
    s = table.attrs.get("significance") or {}
    if not s.get("family"):
        return ""
    return (
        f"*Δ beyond chance?*: whether ours and the published Spearman lie further apart than chance allows. p: "
        f"two-sided, Fisher's z with "
        f"the standard error of our 95% bootstrap CI, the published number taken as fixed; q: p adjusted by "
        f"{s['method']} over the {s['family']} comparable cell{'s' if s['family'] != 1 else ''} of this report "
        f"(false discovery rate {100 * s['alpha']:g}%); flagged where q < {s['alpha']:g}.\n"
    )


def cell(r: object) -> str:
    """A row's flag in words: "yes (q 0.004)", "no (q 0.41)", or "" where it is not comparable."""
    q = _num(getattr(r, "paper_q", None))
    if q is None:
        return ""
    return f"{'yes' if q < ALPHA else 'no'} (p {_p(_num(getattr(r, 'paper_p', None)))}, q {_p(q)})"


def _p(v: float | None) -> str:
    return "–" if v is None else f"{v:.2g}" if v >= 0.001 else "<0.001"


def _num(v: object) -> float | None:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    return float(v)  # type: ignore[arg-type]
