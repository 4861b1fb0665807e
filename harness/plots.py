"""PNG plots of a report table: Spearman against k per instruction, and the invalid-output rate by setting."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only; never needs a display

import matplotlib.pyplot as plt
import pandas as pd

from harness.tables import DATASET_NAMES, INSTR_ORDER


def _ordered(values: pd.Series) -> list[str]:
    present = list(dict.fromkeys(values))
    return [i for i in INSTR_ORDER if i in present] + [i for i in present if i not in INSTR_ORDER]


def _main_rows(table: pd.DataFrame) -> pd.DataFrame:
    """One run per (dataset, split, model, instr, k): the last given, as in the tables."""
    t = table[(table["variant"] == "sentences") & (table["labels"] == "original")]
    return t.drop_duplicates(["dataset", "split", "model", "instr", "shots", "seed"], keep="last")


def _num(v: object) -> float:
    return float("nan") if v is None else float(v)  # type: ignore[arg-type]


def plot_spearman_vs_k(table: pd.DataFrame, path: Path) -> list[Path]:
    """Rows: datasets; columns: instructions; one line per model with its 95% CI, published values dashed."""
    t = _main_rows(table.dropna(subset=["spearman"]))
    if not len(t):
        return []
    datasets = list(dict.fromkeys(t["dataset"] + " " + t["split"]))
    instrs = _ordered(t["instr"])
    models = list(dict.fromkeys(t["model"] + _seed_suffix(t)))
    colors = {m: plt.get_cmap("tab10")(i % 10) for i, m in enumerate(models)}
    size = (3.6 * len(instrs) + 1.8, 3.0 * len(datasets))
    fig, axes = plt.subplots(len(datasets), len(instrs), figsize=size, squeeze=False, sharex=True, sharey="row")
    shots = sorted(t["shots"].unique())
    for i, ds in enumerate(datasets):
        for j, instr in enumerate(instrs):
            ax = axes[i][j]
            cell = t[(t["dataset"] + " " + t["split"] == ds) & (t["instr"] == instr)].assign(
                label=lambda d: d["model"] + _seed_suffix(d)
            )
            for model, rows in cell.sort_values("shots").groupby("label", sort=False):
                x, y = rows["shots"].to_numpy(), rows["spearman"].map(_num).to_numpy()
                lo = rows["spearman_lo"].map(_num).to_numpy() if "spearman_lo" in rows else y
                hi = rows["spearman_hi"].map(_num).to_numpy() if "spearman_hi" in rows else y
                color = colors[str(model)]
                ax.plot(x, y, "o-", color=color, label=str(model))
                ax.fill_between(x, lo, hi, color=color, alpha=0.18, linewidth=0)
                paper = rows["paper_spearman"].map(_num).to_numpy() if "paper_spearman" in rows else []
                if len(paper) and not all(math.isnan(p) for p in paper):
                    ax.plot(x, paper, "s--", color=color, mfc="none", alpha=0.8, label=f"{model} (published)")
            ds_name, split = ds.split(" ", 1)
            ax.set_title(f"{DATASET_NAMES.get(ds_name, ds_name)} {split} · instr {instr}", fontsize=9)
            ax.axhline(0, color="grey", linewidth=0.6)
            ax.set_xticks(shots)
            ax.grid(alpha=0.3)
            if i == len(datasets) - 1:
                ax.set_xlabel("k (in-context examples)")
            if j == 0:
                ax.set_ylabel("Spearman ×100")
    handles, labels = _legend_entries(axes)
    fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8, frameon=False)
    has_paper = "paper_spearman" in t and t["paper_spearman"].notna().any()
    note = "; dashed, hollow: published" if has_paper else ""
    fig.suptitle(f"Spearman against k (shaded: 95% bootstrap CI{note})", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return [path]


def _seed_suffix(t: pd.DataFrame) -> pd.Series:
    return (" (seed " + t["seed"].astype(str) + ")") if t["seed"].nunique() > 1 else pd.Series("", index=t.index)


def _legend_entries(axes: Any) -> tuple[list[Any], list[str]]:
    """One legend entry per label across all panels (each panel shows only some models)."""
    seen: dict[str, Any] = {}
    for row in axes:
        for ax in row:
            for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
                seen.setdefault(lab, h)
    return list(seen.values()), list(seen.keys())


def plot_invalid(table: pd.DataFrame, path: Path) -> list[Path]:
    """Invalid-output % per setting (instruction, k), one bar per model, one panel per dataset."""
    t = _main_rows(table.dropna(subset=["invalid_pct"]))
    if not len(t):
        return []
    datasets = list(dict.fromkeys(t["dataset"] + " " + t["split"]))
    models = list(dict.fromkeys(t["model"] + _seed_suffix(t)))
    settings = [(i, k) for i in _ordered(t["instr"]) for k in sorted(t["shots"].unique())]
    width = 0.8 / len(models)
    fig, axes = plt.subplots(
        len(datasets),
        1,
        figsize=(max(6.0, 0.7 * len(settings) * max(1, len(models)) ** 0.5 + 2), 2.8 * len(datasets)),
        squeeze=False,
    )
    for i, ds in enumerate(datasets):
        ax = axes[i][0]
        cell = t[t["dataset"] + " " + t["split"] == ds].assign(label=lambda d: d["model"] + _seed_suffix(d))
        for m_i, model in enumerate(models):
            rows = cell[cell["label"] == model].set_index(["instr", "shots"])
            values = [_num(rows["invalid_pct"].get(s)) for s in settings]
            xs = [s_i + (m_i - (len(models) - 1) / 2) * width for s_i in range(len(settings))]
            bars = ax.bar(xs, values, width=width, color=plt.get_cmap("tab10")(m_i % 10), label=model)
            # Printed values keep a 0% bar visible, and that is the number readers look for.
            ax.bar_label(bars, fmt="%.0f", fontsize=6, padding=1)
            if "paper_invalid_pct" in rows:
                paper = [_num(rows["paper_invalid_pct"].get(s)) for s in settings]
                ax.plot(xs, paper, "k_", markersize=max(4.0, 60 * width), label="published")
        ax.set_xticks(range(len(settings)))
        ax.set_xticklabels([f"{instr}\nk={k}" for instr, k in settings], fontsize=8)
        ds_name, split = ds.split(" ", 1)
        ax.set_title(f"{DATASET_NAMES.get(ds_name, ds_name)} {split}", fontsize=9)
        ax.set_ylabel("invalid outputs %")
        ax.set_ylim(0, 110)
        ax.grid(axis="y", alpha=0.3)
    handles, labels = _legend_entries(axes)
    fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8, frameon=False)
    fig.suptitle("Invalid outputs by setting (replaced by the uniform fallback)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return [path]
