"""Report tables (one row per run) in the papers' layouts, as Markdown, CSV and LaTeX."""

from __future__ import annotations

import math
import re
from typing import Any

import pandas as pd

from harness.datasets import DATASETS
from harness.results.read import IDENTITY
from harness.types import HarnessError

INSTR_ORDER = ("none", "short", "long")
LAYOUT_METRICS = (("invalid_pct", "Invalid"), ("pearson", "Pearson"), ("spearman", "Spearman"))
# Per k: the paper's three numbers, with n, failed requests and the published Spearman beside them.
COLUMN_NAMES = {"n": "n", "errors": "Errors", "invalid_pct": "Invalid", "pearson": "Pearson", "spearman": "Spearman"}
COLUMN_NAMES |= {"paper_spearman": "Published Spearman"}
CELL_KEYS = (*COLUMN_NAMES, "paper_note")
DATASET_NAMES = {name: d.display for name, d in DATASETS.items()}  # a user's dataset file: its name


def fmt(v: Any, digits: int = 2) -> str:
    """A number as the papers print it; missing or undefined is an en dash."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def words(v: Any, default: str = "–") -> str:
    """A text cell: pandas turns a missing string into NaN, which must not print as "nan"."""
    return v if isinstance(v, str) and v else default


def _instr_key(instr: str) -> tuple[int, str]:
    return (INSTR_ORDER.index(instr), "") if instr in INSTR_ORDER else (len(INSTR_ORDER), instr)


def layout(group: pd.DataFrame) -> pd.DataFrame:
    """Deshpande et al. 2023, Tables 11/12: rows instruction × model, columns k × {n, errors, Invalid, Pearson,
    Spearman, published Spearman}. Each cell is one run: the row label (model and the settings that tell runs
    apart, see rowkeys.py) makes it so, and a second run for one cell is an error, never merged."""
    group = group[~group["dry_run"].astype(bool)]
    shots = sorted(group["shots"].unique())
    cells: dict[tuple[str, str], dict[tuple[int, str], Any]] = {}
    for r in group.itertuples():
        row = cells.setdefault((r.instr, r.row), {})
        if (r.shots, "n") in row:
            raise HarnessError(f"two runs for one table cell ({r.row}, {r.instr}, k={r.shots}): {r.run}")
        row |= {(r.shots, key): getattr(r, key, None) for key in CELL_KEYS}
    order = sorted(cells, key=lambda ix: (_instr_key(ix[0]), list(group["row"]).index(ix[1])))
    columns = pd.MultiIndex.from_product([shots, list(CELL_KEYS)])
    wide = pd.DataFrame([[cells[ix].get(c) for c in columns] for ix in order], columns=columns, dtype=object)
    wide.index = pd.MultiIndex.from_tuples(order, names=["instr", "row"])
    return wide


def _cell(key: str, value: Any, note: Any) -> str:
    if key in ("n", "errors"):
        return "–" if _missing(value) else str(int(value))
    if key == "paper_spearman" and not _missing(value) and isinstance(note, str) and note:
        return f"{fmt(value)}, {note}"
    return fmt(value)


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def group_name(key: tuple[str, ...]) -> str:
    """File-name stem of one table: dataset-split[-variant][-labels]."""
    dataset, split, variant, labels = key
    parts = (
        [dataset, split] + ([variant] if variant != "sentences" else []) + ([labels] if labels != "original" else [])
    )
    return re.sub(r"[^A-Za-z0-9._-]+", "_", "-".join(parts))


def group_title(key: tuple[str, ...]) -> str:
    dataset, split, variant, labels = key
    extra = ", ".join(
        x for x in (variant if variant != "sentences" else "", labels if labels != "original" else "") if x
    )
    return f"{DATASET_NAMES.get(dataset, dataset)} {split}" + (f" ({extra})" if extra else "")


def layout_markdown(wide: pd.DataFrame) -> str:
    shown = [(k, key) for k, key in wide.columns if key in COLUMN_NAMES]
    header = ["Instruction", "Model"] + [f"k={k} {COLUMN_NAMES[key]}" for k, key in shown]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * 2 + "---:|" * len(shown)]
    previous = None
    for (instr, model), values in wide.iterrows():
        first = instr if instr != previous else ""
        previous = instr
        cells = [_cell(key, values[(k, key)], values[(k, "paper_note")]) for k, key in shown]
        lines.append("| " + " | ".join([_md(first), _md(model), *cells]) + " |")
    return "\n".join(lines) + "\n"


def _md(text: str) -> str:
    """Table-cell text: a pipe would split the cell, a newline the row."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def layout_csv(wide: pd.DataFrame) -> str:
    names = {"invalid_pct": "invalid", "paper_spearman": "published_spearman", "paper_note": "published_note"}
    flat = wide.copy()
    flat.columns = [f"k{k}_{names.get(key, key)}" for k, key in wide.columns]
    flat.index.names = ["instruction", "model"]
    return flat.reset_index().to_csv(index=False, float_format="%.4f")


def _tex(text: str) -> str:
    return re.sub(r"([&%$#_{}])", r"\\\1", text).replace("(x100)", "($\\times$100)")


def layout_latex(wide: pd.DataFrame, caption: str) -> str:
    """booktabs table with one multicolumn block per k, as in the paper (with n and failed requests)."""
    names = {"n": "n", "errors": "Err.", "invalid_pct": "Invalid", "pearson": "Pearson", "spearman": "Spearman"}
    shown = [(k, key) for k, key in wide.columns if key in names]
    shots = list(dict.fromkeys(k for k, _ in shown))
    per_k = len(names)
    lines = [
        "\\begin{table}[t]",
        "\\centering",
        "\\small",
        "\\begin{tabular}{ll" + "r" * per_k * len(shots) + "}",
        "\\toprule",
        " & & " + " & ".join(f"\\multicolumn{{{per_k}}}{{c}}{{{k}-shot}}" for k in shots) + " \\\\",
        "".join(f"\\cmidrule(lr){{{3 + i * per_k}-{2 + (i + 1) * per_k}}}" for i in range(len(shots))),
        "Instruction & Model & " + " & ".join(names[key] for _, key in shown) + " \\\\",
        "\\midrule",
    ]
    previous = None
    for (instr, model), values in wide.iterrows():
        if previous is not None and instr != previous:
            lines.append("\\midrule")
        first = _tex(instr.capitalize()) if instr != previous else ""
        previous = instr
        cells = [_cell(key, values[(k, key)], None).replace("–", "--") for k, key in shown]
        lines.append(" & ".join([first, _tex(model), *cells]) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}", f"\\caption{{{_tex(caption)}}}", "\\end{table}"]
    return "\n".join(lines) + "\n"


def side_by_side(table: pd.DataFrame) -> pd.DataFrame:
    """C-STS beside STS-B for each model, instruction and k run under the same settings, with the gap
    (STS-B − C-STS). Every row names its two runs."""
    key = ["model", "instr", "shots", *IDENTITY]
    live = table[~table["dry_run"].astype(bool)]
    cs = live[(live["dataset"] == "csts") & (live["variant"] == "sentences") & (live["labels"] == "original")]
    sb = live[live["dataset"] == "stsb"]
    cols = ["split", "row", "n", "errors", "invalid_pct", "spearman", "pearson", "ref", "run"]
    merged = cs[key + cols].merge(sb[key + cols], on=key, suffixes=("_csts", "_stsb"))
    merged["spearman_gap"] = merged["spearman_stsb"] - merged["spearman_csts"]
    merged["pearson_gap"] = merged["pearson_stsb"] - merged["pearson_csts"]
    return merged.sort_values(["model", "instr", "shots"], key=_sort_key).reset_index(drop=True)


def _sort_key(col: pd.Series) -> pd.Series:
    return col.map(lambda v: _instr_key(v)[0]) if col.name == "instr" else col


def md_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"
