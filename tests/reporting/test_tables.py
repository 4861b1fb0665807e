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


def _five_runs() -> pd.DataFrame:
    """Four instructions (one of them a custom template, shown last), two k, one cell with n unknown."""
    return pd.DataFrame(
        [
            _row("b", 2, 50.0),
            _row("a", 0, 40.0, instr="my-own"),
            _row("c", 0, 20.5, paper_spearman=19.0),
            _row("a", 2, 41.25, instr="none", n=None),
            _row("b", 0, 30.0, instr="short", errors=2),
        ]
    )


def test_markdown_layout_whole() -> None:
    md = layout_markdown(layout(_five_runs())).splitlines()
    head = [
        f"k={k} {c}" for k in (0, 2) for c in ("n", "Errors", "Invalid", "Pearson", "Spearman", "Published Spearman")
    ]
    assert md[0] == "| Instruction | Model | " + " | ".join(head) + " |"
    assert md[1] == "|---|---|" + "---:|" * 12
    assert md[2:] == [
        "| none | a | – | – | – | – | – | – | – | 0 | 5.00 | 40.25 | 41.25 | – |",
        "| short | b | 100 | 2 | 5.00 | 29.00 | 30.00 | – | – | – | – | – | – | – |",
        "| long | b | – | – | – | – | – | – | 100 | 0 | 5.00 | 49.00 | 50.00 | – |",
        "|  | c | 100 | 0 | 5.00 | 19.50 | 20.50 | 19.00 | – | – | – | – | – | – |",
        "| my-own | a | 100 | 0 | 5.00 | 39.00 | 40.00 | – | – | – | – | – | – | – |",
    ]


def test_latex_layout_whole() -> None:
    dashes = " & ".join(["--"] * 5)
    assert layout_latex(layout(_five_runs()), "C-STS validation").splitlines() == [
        "\\begin{table}[t]",
        "\\centering",
        "\\small",
        "\\begin{tabular}{llrrrrrrrrrr}",
        "\\toprule",
        " & & \\multicolumn{5}{c}{0-shot} & \\multicolumn{5}{c}{2-shot} \\\\",
        "\\cmidrule(lr){3-7}\\cmidrule(lr){8-12}",
        "Instruction & Model & " + " & ".join(["n", "Err.", "Invalid", "Pearson", "Spearman"] * 2) + " \\\\",
        "\\midrule",
        f"None & a & {dashes} & -- & 0 & 5.00 & 40.25 & 41.25 \\\\",
        "\\midrule",
        f"Short & b & 100 & 2 & 5.00 & 29.00 & 30.00 & {dashes} \\\\",
        "\\midrule",
        f"Long & b & {dashes} & 100 & 0 & 5.00 & 49.00 & 50.00 \\\\",
        f" & c & 100 & 0 & 5.00 & 19.50 & 20.50 & {dashes} \\\\",
        "\\midrule",
        f"My-own & a & 100 & 0 & 5.00 & 39.00 & 40.00 & {dashes} \\\\",
        "\\bottomrule",
        "\\end{tabular}",
        "\\caption{C-STS validation}",
        "\\end{table}",
    ]


def test_csv_layout_whole() -> None:
    lines = layout_csv(layout(_five_runs())).splitlines()
    cols = ["n", "errors", "invalid", "pearson", "spearman", "published_spearman", "published_note"]
    assert lines[0] == "instruction,model," + ",".join(f"k{k}_{c}" for k in (0, 2) for c in cols)
    assert lines[1:] == [
        "none,a,,,,,,,,,0,5.0,40.25,41.25,,",
        "short,b,100.0,2,5.0,29.0,30.0,,,,,,,,,",
        "long,b,,,,,,,,100.0,0,5.0,49.0,50.0,,",
        "long,c,100.0,0,5.0,19.5,20.5,19.0,,,,,,,,",
        "my-own,a,100.0,0,5.0,39.0,40.0,,,,,,,,,",
    ]


def test_group_names_titles_and_number_formats() -> None:
    from harness.reporting.tables import fmt, group_name, group_title, md_table, words

    assert group_name(("csts", "validation", "qa", "reannotated")) == "csts-validation-qa-reannotated"
    assert group_name(("stsb", "val/x y", "sentences", "original")) == "stsb-val_x_y"
    assert group_title(("csts", "validation", "qa", "reannotated")) == "C-STS validation (qa, reannotated)"
    assert group_title(("csts", "test", "sentences", "reannotated")) == "C-STS test (reannotated)"
    assert group_title(("stsb", "validation", "sentences", "original")) == "STS-B validation"
    assert group_title(("sick", "dev", "qa", "original")) == "sick dev (qa)"
    assert [fmt(None), fmt(float("nan")), fmt(3), fmt(2.345), fmt(2.345, 1), fmt("x")] == [
        "–",
        "–",
        "3",
        "2.35",
        "2.3",
        "x",
    ]
    assert [words("a"), words(""), words(float("nan")), words(None, "none")] == ["a", "–", "–", "none"]
    assert md_table(["A", "B"], [["1", "2"]]) == "| A | B |\n|---|---|\n| 1 | 2 |\n"


def test_side_by_side_pairs_runs_of_the_same_settings_with_the_gap() -> None:
    from harness.reporting.tables import side_by_side
    from harness.results.read import IDENTITY

    def run(dataset: str, model: str, instr: str, spearman: float, **kw: object) -> dict[str, object]:
        base = {k: None for k in IDENTITY} | {"variant": "sentences", "labels": "original", "dry_run": False}
        return base | {
            "dataset": dataset, "model": model, "instr": instr, "shots": 0, "split": "validation", "row": model,
            "n": 10, "errors": 0, "invalid_pct": 0.0, "spearman": spearman, "pearson": spearman / 2,
            "ref": f"{dataset}-{model}", "run": f"{dataset}-{model}-{instr}",
        } | kw  # fmt: skip

    table = pd.DataFrame(
        [
            run("csts", "m", "long", 30.0),
            run("stsb", "m", "long", 80.0),
            run("csts", "m", "none", 20.0),
            run("stsb", "m", "none", 70.5),
            run("csts", "m", "short", 25.0, labels="reannotated"),  # another label set: never beside STS-B
            run("stsb", "m", "short", 75.0),
            run("csts", "x", "none", 1.0, dry_run=True),
            run("stsb", "x", "none", 2.0),
        ]
    )
    out = side_by_side(table)
    assert list(out["instr"]) == ["none", "long"]
    assert list(out["spearman_gap"]) == [50.5, 50.0]
    assert list(out["pearson_gap"]) == [25.25, 25.0]
    assert list(out["run_csts"]) == ["csts-m-none", "csts-m-long"]
