"""Significance flags beside published numbers (harness/reporting/significance.py): each comparable cell's p against
the published value, adjusted by Benjamini–Hochberg over the report's cells, checked on the worked example of
Benjamini & Hochberg (1995, §4), and named wherever the flags are shown (report.md, index.html)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from scipy.stats import norm

from harness.reporting.report import write_report
from harness.reporting.significance import flag_differences
from harness.scoring.stats import p_against
from tests.synthetic_runs import make_run

# Benjamini & Hochberg (1995), §4: 15 p-values of a clinical trial; at q = 0.05 the procedure rejects the four
# smallest (Bonferroni-style control, e.g. Holm's, rejects three; each test alone at 5 % rejects nine).
BH_1995 = [0.0001, 0.0004, 0.0019, 0.0095, 0.0201, 0.0278, 0.0298, 0.0344, 0.0459, 0.3240, 0.4262, 0.5719, 0.6528,
           0.7590, 1.0000]  # fmt: skip
SE = 0.1  # a cell's standard error in Fisher's z


def _cell(p: float, estimate: float = 50.0) -> dict[str, float]:
    """A row whose 95 % CI has standard error SE in z, and a published number at the distance that gives p."""
    z = math.atanh(estimate / 100)
    half = norm.ppf(0.975) * SE
    paper = 100 * math.tanh(z - SE * norm.isf(p / 2))
    row = {"spearman": estimate, "spearman_lo": 100 * math.tanh(z - half), "spearman_hi": 100 * math.tanh(z + half)}
    return row | {"paper_spearman": paper, "diff_spearman": estimate - paper}


def test_p_is_five_percent_at_the_ci_bound_and_one_at_the_estimate() -> None:
    row = _cell(0.5)
    args = (row["spearman"], row["spearman_lo"], row["spearman_hi"])
    assert p_against(*args, row["spearman_lo"]) == pytest.approx(0.05, abs=1e-12)
    assert p_against(*args, row["spearman"]) == 1.0
    assert p_against(*args, row["paper_spearman"]) == pytest.approx(0.5, abs=1e-12)
    assert p_against(*args[:2], None, 40.0) is None and p_against(100.0, 90.0, 100.0, 40.0) is None


def test_benjamini_hochberg_flags_the_papers_worked_example() -> None:
    cells = [_cell(p) for p in BH_1995]
    not_comparable = {"spearman": 50.0, "spearman_lo": 40.0, "spearman_hi": 60.0, "paper_spearman": 10.0}
    table = flag_differences(pd.DataFrame([*cells, not_comparable | {"diff_spearman": None}]))
    assert table["paper_p"].tolist()[:15] == pytest.approx(BH_1995, abs=1e-9)
    assert table["paper_differs"].tolist() == [True] * 4 + [False] * 11 + [None]
    assert sum(p < 0.05 for p in BH_1995) == 9  # unadjusted, five more cells would have been flagged
    assert table.attrs["significance"] == {"method": "Benjamini–Hochberg", "alpha": 0.05, "family": 15}
    assert pd.isna(table["paper_q"].iloc[-1])  # a cell with no Δ is no member of the family


def test_the_report_shows_the_flags_and_names_the_method(tmp_path: Path) -> None:
    results = tmp_path / "results"
    # GPT-4's STS-B cells of Table 12 (zero-shot: no shot stream to match): synthetic replies near the labels
    runs = [
        make_run(results, f"gpt4-{instr}", "gpt-4-0314", dataset="stsb", instr=instr, shots=0, n=1500)
        for instr in ("none", "short", "long")
    ]
    out = write_report(runs, tmp_path / "report")
    published = pd.read_csv(out / "published.csv")
    assert len(published) == 3 and published["paper_q"].notna().all()
    assert (published["paper_q"] >= published["paper_p"]).all() and published["paper_differs"].all()
    report = (out / "report.md").read_text()
    assert "| Δ beyond chance? (Benjamini–Hochberg) |" in report
    assert "adjusted by Benjamini–Hochberg over the 3 comparable cells of this report" in report
    page = (out / "index.html").read_text()
    assert "Δ beyond chance? yes (p &lt;0.001, q &lt;0.001)" in page and "Benjamini–Hochberg" in page
