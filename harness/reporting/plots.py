"""PNG plots of a report table: Spearman against k per instruction, and the invalid-output rate by setting."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import matplotlib
import pandas as pd
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from harness.reporting.rowkeys import GROUP_KEYS
from harness.reporting.tables import INSTR_ORDER, group_title


def _ordered(values: pd.Series) -> list[str]:
    present = list(dict.fromkeys(values))
    return [i for i in INSTR_ORDER if i in present] + [i for i in present if i not in INSTR_ORDER]


def _live(table: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Runs with answers and the metric, each under its table group's title and its row label (one run per
    point: the labels keep runs that differ in any setting apart, as in the tables)."""
    t = table[~table["dry_run"].astype(bool)].dropna(subset=[metric])
    if not len(t):
        return t
    return t.assign(panel=[group_title(tuple(r[k] for k in GROUP_KEYS)) for _, r in t.iterrows()])


def _comparable(rows: pd.DataFrame, key: str) -> list[float]:
    """Published values where the run may be compared with them (whole split, no failures), NaN elsewhere."""
    if key not in rows:
        return [float("nan")] * len(rows)
    notes = rows["paper_note"] if "paper_note" in rows else pd.Series(None, index=rows.index)
    return [_num(v) if not (isinstance(n, str) and n) else float("nan") for v, n in zip(rows[key], notes, strict=True)]


def _num(v: object) -> float:
    return float("nan") if v is None else float(v)  # type: ignore[arg-type]


def plot_spearman_vs_k(table: pd.DataFrame, path: Path) -> list[Path]:
    return _save(spearman_figure(table), path)


def plot_invalid(table: pd.DataFrame, path: Path) -> list[Path]:
    return _save(invalid_figure(table), path)


DPI = 120


def _figure(size: tuple[float, float]) -> Figure:
    """A Figure on an Agg canvas of its own, not through pyplot: no figure manager to make and close, and pyplot's
    module (its backend machinery) is never imported."""
    fig = Figure(figsize=size)
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Figure | None, path: Path) -> list[Path]:
    """savefig(bbox_inches="tight") in one layout pass fewer: the tight box is measured here, at the saving dpi, as
    savefig measures it, and handed over, so savefig does not draw the whole figure once unrendered to measure it
    (tight_layout has already placed everything; the same pixels, a test compares them)."""
    if fig is None:
        return []
    fig.set_layout_engine(None)  # tight_layout ran once; no engine left to re-run (savefig would draw for it)
    fig.dpi = DPI
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    bbox = fig.get_tightbbox(canvas.get_renderer()).padded(matplotlib.rcParams["savefig.pad_inches"])
    fig.savefig(path, dpi=DPI, bbox_inches=bbox)
    return [path]


def spearman_figure(table: pd.DataFrame) -> Figure | None:
    """Rows: table groups; columns: instructions; one line per row label with its 95% CI, published dashed."""
    t = _live(table, "spearman")
    if not len(t):
        return None
    panels = list(dict.fromkeys(t["panel"]))
    instrs = _ordered(t["instr"])
    labels = list(dict.fromkeys(t["row"]))
    colors = {m: colormaps["tab10"](i % 10) for i, m in enumerate(labels)}
    size = (3.6 * len(instrs) + 1.8, 3.0 * len(panels))
    fig = _figure(size)
    axes = fig.subplots(len(panels), len(instrs), squeeze=False, sharex=True, sharey="row")
    shots = sorted(t["shots"].unique())
    has_paper = False
    for i, panel in enumerate(panels):
        for j, instr in enumerate(instrs):
            ax = axes[i][j]
            cell = t[(t["panel"] == panel) & (t["instr"] == instr)]
            for label, rows in cell.sort_values("shots").groupby("row", sort=False):
                x, y = rows["shots"].to_numpy(), rows["spearman"].map(_num).to_numpy()
                lo = rows["spearman_lo"].map(_num).to_numpy() if "spearman_lo" in rows else y
                hi = rows["spearman_hi"].map(_num).to_numpy() if "spearman_hi" in rows else y
                color = colors[str(label)]
                ax.plot(x, y, "o-", color=color, label=str(label))
                if len(x) == 1:  # one k: a band over one point has no width, so the interval is a bar
                    ax.errorbar(x, y, yerr=[y - lo, hi - y], fmt="none", ecolor=color, capsize=4, elinewidth=1.2)
                else:
                    ax.fill_between(x, lo, hi, color=color, alpha=0.18, linewidth=0)
                paper = _comparable(rows, "paper_spearman")
                if not all(math.isnan(p) for p in paper):
                    has_paper = True
                    ax.plot(x, paper, "s--", color=color, mfc="none", alpha=0.8, label=f"{label} (published)")
            ax.set_title(f"{panel} · instr {instr}", fontsize=9)
            ax.axhline(0, color="grey", linewidth=0.6)
            ax.set_xticks(shots)
            ax.grid(alpha=0.3)
            if i == len(panels) - 1:
                ax.set_xlabel("k (in-context examples)")
            if j == 0:
                ax.set_ylabel("Spearman ×100")
    handles, names = _legend_entries(axes)
    fig.legend(handles, names, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8, frameon=False)
    note = "; dashed, hollow: published (comparable runs only)" if has_paper else ""
    fig.suptitle(f"Spearman against k (shaded, or a bar at a lone k: 95% bootstrap CI{note})", fontsize=10)
    fig.tight_layout()
    return fig


def _legend_entries(axes: Any) -> tuple[list[Any], list[str]]:
    """One legend entry per label across all panels (each panel shows only some models)."""
    seen: dict[str, Any] = {}
    for row in axes:
        for ax in row:
            for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
                seen.setdefault(lab, h)
    return list(seen.values()), list(seen.keys())


def invalid_figure(table: pd.DataFrame) -> Figure | None:
    """Invalid-output % per setting (instruction, k), one bar per row label, one panel per table group."""
    t = _live(table, "invalid_pct")
    if not len(t):
        return None
    panels = list(dict.fromkeys(t["panel"]))
    colors = {m: colormaps["tab10"](i % 10) for i, m in enumerate(dict.fromkeys(t["row"]))}
    settings = [(i, k) for i in _ordered(t["instr"]) for k in sorted(t["shots"].unique())]
    most = max(t.groupby("panel")["row"].nunique())
    fig = _figure((max(6.0, 0.7 * len(settings) * most**0.5 + 2), 2.8 * len(panels)))
    axes = fig.subplots(len(panels), 1, squeeze=False)
    for i, panel in enumerate(panels):
        ax = axes[i][0]
        cell = t[t["panel"] == panel]
        labels = list(dict.fromkeys(cell["row"]))  # this panel's bars sit side by side, centred on the setting
        width = 0.8 / len(labels)
        for m_i, label in enumerate(labels):
            rows = cell[cell["row"] == label].set_index(["instr", "shots"])
            values = [_num(rows["invalid_pct"].get(s)) for s in settings]
            xs = [s_i + (m_i - (len(labels) - 1) / 2) * width for s_i in range(len(settings))]
            bars = ax.bar(xs, values, width=width, color=colors[label], label=label)
            # Printed values keep a 0% bar visible, and that is the number readers look for.
            ax.bar_label(bars, fmt="%.0f", fontsize=6, padding=1)
            paper = _comparable(rows.reindex(settings), "paper_invalid_pct")
            if not all(math.isnan(p) for p in paper):  # no "published" legend entry when nothing is published
                ax.plot(xs, paper, "k_", markersize=max(4.0, 60 * width), label="published")
        ax.set_xticks(range(len(settings)))
        ax.set_xticklabels([f"{instr}\nk={k}" for instr, k in settings], fontsize=8)
        ax.set_title(panel, fontsize=9)
        ax.set_ylabel("invalid outputs %")
        ax.set_ylim(0, 110)
        ax.grid(axis="y", alpha=0.3)
    handles, names = _legend_entries(axes)
    fig.legend(handles, names, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8, frameon=False)
    fig.suptitle("Invalid outputs by setting (replaced by the uniform fallback)", fontsize=10)
    fig.tight_layout()
    return fig
