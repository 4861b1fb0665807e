"""Render a report table (one row per run) as Markdown, CSV and LaTeX in the papers' layouts."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pandas as pd

INSTR_ORDER = ("none", "short", "long")
LAYOUT_METRICS = (("invalid_pct", "Invalid"), ("pearson", "Pearson"), ("spearman", "Spearman"))
DATASET_NAMES = {"csts": "C-STS", "stsb": "STS-B"}
GROUP_KEYS = ["dataset", "split", "variant", "labels"]


def fmt(v: Any, digits: int = 2) -> str:
    """A number as the papers print it; missing or undefined is an en dash."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def _instr_key(instr: str) -> tuple[int, str]:
    return (INSTR_ORDER.index(instr), "") if instr in INSTR_ORDER else (len(INSTR_ORDER), instr)


def _row_label(table: pd.DataFrame) -> pd.Series:
    """The model, with the seed when one table mixes seeds (otherwise two runs would share a cell)."""
    if table["seed"].nunique() > 1:
        return table["model"] + " (seed " + table["seed"].astype(str) + ")"
    return table["model"]


def layout(group: pd.DataFrame) -> pd.DataFrame:
    """Deshpande et al. 2023, Tables 11/12: rows instruction × model, columns k × {Invalid, Pearson, Spearman}."""
    g = group.assign(row_model=_row_label(group))
    long = g.melt(id_vars=["instr", "row_model", "shots"], value_vars=[k for k, _ in LAYOUT_METRICS], var_name="metric")
    wide = long.pivot_table(
        index=["instr", "row_model"], columns=["shots", "metric"], values="value", aggfunc="last", dropna=False
    )
    shots = sorted(g["shots"].unique())
    wide = wide.reindex(columns=pd.MultiIndex.from_product([shots, [k for k, _ in LAYOUT_METRICS]]))
    order = sorted(wide.index, key=lambda ix: (_instr_key(ix[0]), list(g["row_model"]).index(ix[1])))
    return wide.loc[order]


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
    names = dict(LAYOUT_METRICS)
    header = ["Instruction", "Model"] + [f"k={k} {names[m]}" for k, m in wide.columns]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * 2 + "---:|" * len(wide.columns)]
    previous = None
    for (instr, model), values in wide.iterrows():
        shown = instr if instr != previous else ""
        previous = instr
        lines.append("| " + " | ".join([shown, model] + [fmt(v) for v in values]) + " |")
    return "\n".join(lines) + "\n"


def layout_csv(wide: pd.DataFrame) -> str:
    names = dict(LAYOUT_METRICS)
    flat = wide.copy()
    flat.columns = [f"k{k}_{names[m].lower()}" for k, m in wide.columns]
    flat.index.names = ["instruction", "model"]
    return flat.reset_index().to_csv(index=False, float_format="%.4f")


def _tex(text: str) -> str:
    return re.sub(r"([&%$#_{}])", r"\\\1", text).replace("(x100)", "($\\times$100)")


def layout_latex(wide: pd.DataFrame, caption: str) -> str:
    """booktabs table with one multicolumn block per k, as in the paper."""
    names = dict(LAYOUT_METRICS)
    shots = list(dict.fromkeys(k for k, _ in wide.columns))
    per_k = len(LAYOUT_METRICS)
    lines = [
        "\\begin{table}[t]",
        "\\centering",
        "\\small",
        "\\begin{tabular}{ll" + "rrr" * len(shots) + "}",
        "\\toprule",
        " & & " + " & ".join(f"\\multicolumn{{{per_k}}}{{c}}{{{k}-shot}}" for k in shots) + " \\\\",
        "".join(f"\\cmidrule(lr){{{3 + i * per_k}-{2 + (i + 1) * per_k}}}" for i in range(len(shots))),
        "Instruction & Model & " + " & ".join(names[m] for _, m in wide.columns) + " \\\\",
        "\\midrule",
    ]
    previous = None
    for (instr, model), values in wide.iterrows():
        if previous is not None and instr != previous:
            lines.append("\\midrule")
        shown = _tex(instr.capitalize()) if instr != previous else ""
        previous = instr
        cells = [fmt(v).replace("–", "--") for v in values]
        lines.append(" & ".join([shown, _tex(model), *cells]) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}", f"\\caption{{{_tex(caption)}}}", "\\end{table}"]
    return "\n".join(lines) + "\n"


def side_by_side(table: pd.DataFrame) -> pd.DataFrame:
    """C-STS beside STS-B for each model, instruction and k, with the gap (STS-B − C-STS)."""
    key = ["model", "instr", "shots", "seed"]
    cs = table[(table["dataset"] == "csts") & (table["variant"] == "sentences") & (table["labels"] == "original")]
    sb = table[table["dataset"] == "stsb"]
    cols = ["split", "invalid_pct", "spearman", "pearson", "run"]
    merged = cs[key + cols].merge(sb[key + cols], on=key, suffixes=("_csts", "_stsb"))
    merged["spearman_gap"] = merged["spearman_stsb"] - merged["spearman_csts"]
    merged["pearson_gap"] = merged["pearson_stsb"] - merged["pearson_csts"]
    return merged.sort_values(["model", "instr", "shots"], key=_sort_key).reset_index(drop=True)


def _sort_key(col: pd.Series) -> pd.Series:
    return col.map(lambda v: _instr_key(v)[0]) if col.name == "instr" else col


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def _ci(row: Any, name: str) -> str:
    lo, hi = getattr(row, f"{name}_lo", None), getattr(row, f"{name}_hi", None)
    return f"{fmt(getattr(row, name))} [{fmt(lo)}, {fmt(hi)}]"


def _mean_sd(row: Any, name: str) -> str:
    mean = getattr(row, f"{name}_fallback_mean", None)
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "no invalid outputs"
    return f"{fmt(mean)} ± {fmt(getattr(row, f'{name}_fallback_sd', None))}"


def render_report(table: pd.DataFrame, out: Path, plots: list[Path]) -> list[Path]:
    """Write runs.csv, one table per dataset/split (md, csv, tex), side_by_side.csv, published.csv and report.md."""
    table = table.reset_index(drop=True)
    table.insert(0, "ref", [f"R{i + 1}" for i in range(len(table))])
    files = [out / "runs.csv"]
    table.to_csv(files[0], index=False, float_format="%.4f")
    md = [
        "# C-STS prompting report\n",
        "Numbers are ×100, recomputed from each run's `samples.jsonl` (no model was called). "
        "Every row cites its run folder in the *Runs* section; `runs.csv` holds every number with its folder.\n",
    ]
    for key, group in table.groupby(GROUP_KEYS, sort=False):
        wide = layout(group)
        stem = f"table_{group_name(key)}"  # type: ignore[arg-type]
        title = group_title(key)  # type: ignore[arg-type]
        for suffix, text in (
            ("md", layout_markdown(wide)),
            ("csv", layout_csv(wide)),
            ("tex", layout_latex(wide, f"{title}: invalid outputs (%), Pearson and Spearman (x100).")),
        ):
            (out / f"{stem}.{suffix}").write_text(text, encoding="utf-8")
            files.append(out / f"{stem}.{suffix}")
        md += [f"## {title}\n", layout_markdown(wide)]

    sbs = side_by_side(table)
    if len(sbs):
        sbs.to_csv(out / "side_by_side.csv", index=False, float_format="%.4f")
        files.append(out / "side_by_side.csv")
        rows = [
            [
                r.model,
                r.instr,
                str(r.shots),
                fmt(r.spearman_csts),
                fmt(r.spearman_stsb),
                fmt(r.spearman_gap),
                fmt(r.pearson_csts),
                fmt(r.pearson_stsb),
                fmt(r.pearson_gap),
            ]
            for r in sbs.itertuples()
        ]
        header = ["Model", "Instruction", "k", "C-STS Spearman", "STS-B Spearman", "gap"]
        md += [
            "## C-STS beside STS-B (gap = STS-B − C-STS)\n",
            _md_table([*header, "C-STS Pearson", "STS-B Pearson", "gap"], rows),
        ]

    md += _published_section(table, out, files)
    md += _uncertainty_section(table)
    if plots:
        md += ["## Plots\n", *(f"![{p.stem.replace('_', ' ')}]({p.name})\n" for p in plots)]
    md += ["## Runs\n", _md_table(["ref", "run folder"], [[r.ref, f"`{r.run_dir}`"] for r in table.itertuples()])]
    bad = table[table["mismatch"].astype(bool)]
    if len(bad):
        md.append(
            "\n**Warning**: metrics.json differs from samples.jsonl for "
            + ", ".join(f"{r.ref} ({r.mismatch})" for r in bad.itertuples())
            + "; the tables use samples.jsonl.\n"
        )
    (out / "report.md").write_text("\n".join(md), encoding="utf-8")
    files.append(out / "report.md")
    return files


def _published_section(table: pd.DataFrame, out: Path, files: list[Path]) -> list[str]:
    matched = table[table["paper_source"].notna()]
    if not len(matched):
        return [
            "## Published numbers\n",
            "No run matches a published setting (model, dataset, split, instruction, k).\n",
        ]
    cols = ["ref", "dataset", "split", "variant", "labels", "model", "paper_model", "instr", "shots"]
    nums = [c for k, _ in LAYOUT_METRICS for c in (k, f"paper_{k}", f"diff_{k}")]
    matched[[*cols, *nums, "paper_source", "run"]].to_csv(out / "published.csv", index=False, float_format="%.4f")
    files.append(out / "published.csv")
    rows = []
    for r in matched.itertuples():
        cells = []
        for k, _ in LAYOUT_METRICS:
            cells += [fmt(getattr(r, k)), fmt(getattr(r, f"paper_{k}")), fmt(getattr(r, f"diff_{k}"))]
        rows.append([r.ref, f"{r.model} ({r.paper_model})", f"{r.dataset} {r.split}", r.instr, str(r.shots), *cells])
        rows[-1].append(r.paper_source)
    header = ["ref", "model (published as)", "data", "instr", "k"]
    header += [f"{label} {who}" for _, label in LAYOUT_METRICS for who in ("ours", "paper", "Δ")] + ["source"]
    return ["## Published numbers beside ours (Δ = ours − paper)\n", _md_table(header, rows)]


def _uncertainty_section(table: pd.DataFrame) -> list[str]:
    rows = []
    for r in table.itertuples():
        if r.spearman is None or (isinstance(r.spearman, float) and math.isnan(r.spearman)):
            continue
        common = f"{fmt(r.spearman_common)} (n={r.n_common})" if r.n_common is not None else "–"
        rows.append(
            [
                r.ref,
                r.dataset,
                r.model,
                r.instr,
                str(r.shots),
                str(r.n),
                _ci(r, "spearman"),
                _ci(r, "pearson"),
                _mean_sd(r, "spearman"),
                f"{fmt(r.spearman_valid)} (n={r.n_valid})",
                common,
            ]
        )
    header = ["ref", "data", "model", "instr", "k", "n", "Spearman [95% CI]", "Pearson [95% CI]"]
    header += ["Spearman over fallback seeds (mean ± sd)", "Spearman, valid only", "Spearman, items all parsed"]
    note = (
        "95% percentile bootstrap, 1,000 resamples; C-STS resamples sentence pairs (both conditions together), "
        "STS-B resamples items. The fallback spread redraws the invalid outputs' uniform fallback under seeds 0–19. "
        "*Items all parsed*: the items every run of the same dataset and split answered validly.\n"
    )
    return ["## Uncertainty\n", note, _md_table(header, rows)] if rows else []
