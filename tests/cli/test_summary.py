"""The lines a finished run prints (harness/cli/summary.py)."""

from __future__ import annotations

from harness.cli.summary import HEADLINE, metrics_line


def test_a_note_shared_by_several_numbers_is_said_once_and_each_distinct_note_gets_its_mark() -> None:
    # issue 42: Qwen2.5-Coder's line said "(near-constant predictions: 102 of 200 (51%) are 3.0)" after each of
    # spearman, pearson, spearman_valid and pearson_valid
    near = "near-constant predictions: 102 of 200 (51%) are 3.0"
    m = {
        "n": 200,
        "invalid_pct": 1.5,
        "spearman": -2.79,
        "spearman_note": near,
        "pearson": -3.68,
        "pearson_note": near,
        "spearman_valid": -2.5,
        "spearman_valid_note": "n=12",
        "pearson_valid": -3.0,
        "pearson_valid_note": "n=12",
        "mse": 1.9,
        "mse_note": "includes 2 out-of-range predictions",
    }
    line = metrics_line(m, [*HEADLINE, "mse"])
    assert line == (
        "n=200  invalid_pct=1.50  spearman=-2.79†  pearson=-3.68†  spearman_valid=-2.50‡  pearson_valid=-3.00‡  "
        f"mse=1.90§  († {near}; ‡ n=12; § includes 2 out-of-range predictions)"
    )
    assert line.count(near) == 1


def test_a_line_without_notes_has_no_marks() -> None:
    assert metrics_line({"n": 40, "spearman": 51.0, "pearson": 49.5}, HEADLINE) == (
        "n=40  spearman=51.00  pearson=49.50"
    )
