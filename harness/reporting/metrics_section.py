"""The report's "More metrics" section: every metric of harness/scoring/metrics.py METRICS, per run with answers,
recomputed from samples.jsonl (report.py summarize), with its note where the number could mislead."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from harness.reporting.html_sections import Markup, esc, html_table
from harness.reporting.markdown import live_runs
from harness.reporting.part import Part
from harness.reporting.tables import fmt, md_table
from harness.results.read import Run
from harness.scoring.metrics import METRICS


def section(table: pd.DataFrame, runs: Sequence[Run]) -> Part | None:
    """None when no run has any of the metrics (no labels, or a metric that does not apply to its variant)."""
    live = live_runs(table)
    shown = [r for r in live.itertuples() if any(_value(r, name) is not None for name in METRICS)]
    if not shown:
        return None
    header = ["ref", "data", "model", "instr", "k", "n", *(f"{m.title} ({name})" for name, m in METRICS.items())]
    md_rows, html_rows, notes = [], [], []
    for r in shown:
        cells = [r.ref, f"{r.dataset} {r.split}", r.row, r.instr, str(r.shots), str(r.n)]
        md_rows.append(cells + [fmt(_value(r, name)) + (" †" if _note(r, name) else "") for name in METRICS])
        html_rows.append(cells + [_html_cell(r, name) for name in METRICS])
        notes += [f"{r.ref} {name}: {_note(r, name)}" for name in METRICS if _note(r, name)]
    intro = (
        "Computed from each run's `samples.jsonl` over its labelled answers (fallback draws included, as for the "
        "paper's Spearman); a metric on the label scale is left out for predictions that are cosines (`qa-embed`).\n"
    )
    bullets = "".join(f"- † {n}\n" for n in notes)
    html_notes = "".join(f"<li>† {esc(n)}</li>" for n in notes)
    return Part(
        [intro, md_table(header, md_rows), *([bullets] if bullets else [])],
        f'<p class="help">{esc(intro.strip())}</p><div class="scroll">{html_table(header, html_rows, "metrics")}</div>'
        + (f'<ul class="notes">{html_notes}</ul>' if html_notes else ""),
    )


def _value(r: Any, name: str) -> float | None:
    value = getattr(r, name, None)
    return None if value is None or pd.isna(value) else float(value)


def _note(r: Any, name: str) -> str:
    note = getattr(r, f"{name}_note", None)
    return note if isinstance(note, str) and note else ""


def _html_cell(r: Any, name: str) -> Markup:
    value = esc(fmt(_value(r, name)))
    note = _note(r, name)
    return Markup(f'<span class="flag" title="{esc(note)}">{value} †</span>' if note else value)
