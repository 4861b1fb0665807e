"""The layout tables: one run per cell, n and failures beside every number, the published column, escaping."""

from __future__ import annotations

import pandas as pd
import pytest

from harness.reporting.tables import layout, layout_csv, layout_latex, layout_markdown
from harness.types import HarnessError


def _row(row: str, shots: int, spearman: float, **kw: object) -> dict[str, object]:
    return {
        "instr": "long", "row": row, "shots": shots, "dry_run": False, "run": f"{row}-{shots}", "n": 100,
        "errors": 0, "invalid_pct": 5.0, "pearson": spearman - 1, "spearman": spearman, "paper_spearman": None,
        "paper_note": None,
    } | kw  # fmt: skip


def test_a_second_run_for_one_cell_is_an_error_never_a_merge() -> None:
    group = pd.DataFrame([_row("m", 4, 10.0), _row("m", 4, 20.0)])
    with pytest.raises(HarnessError, match=r"two runs for one table cell \(m, long, k=4\): m-4"):
        layout(group)


def test_published_column_with_its_comparability() -> None:
    group = pd.DataFrame(
        [
            _row("gpt-4", 4, 60.0, paper_spearman=42.38),
            _row("gpt-4 · limit=9", 4, 80.0, n=9, paper_spearman=42.38, paper_note="not comparable (n=9 of 2,834)"),
            _row("gpt-4", 2, 50.0, errors=3, n=97),
        ]
    )
    md = layout_markdown(layout(group))
    assert "| long | gpt-4 | 97 | 3 | 5.00 | 49.00 | 50.00 | – | 100 | 0 | 5.00 | 59.00 | 60.00 | 42.38 |" in md
    assert "| 42.38, not comparable (n=9 of 2,834) |" in md
    csv = pd.read_csv(__import__("io").StringIO(layout_csv(layout(group))))
    assert list(csv["k4_published_note"].fillna("")) == ["", "not comparable (n=9 of 2,834)"]
    assert list(csv["k2_errors"].fillna(-1)) == [3, -1]


def test_model_names_cannot_break_a_markdown_or_latex_table() -> None:
    group = pd.DataFrame([_row("org/m|x_1", 0, 1.0)])
    wide = layout(group)
    assert "| org/m\\|x_1 |" in layout_markdown(wide)
    assert "org/m|x\\_1" in layout_latex(wide, "caption 50% (x100)")
    assert "caption 50\\% ($\\times$100)" in layout_latex(wide, "caption 50% (x100)")


def test_dry_runs_hold_no_cell() -> None:
    group = pd.DataFrame([_row("m", 0, 1.0), _row("dry", 0, float("nan"), dry_run=True)])
    assert list(layout(group).index.get_level_values("row")) == ["m"]
