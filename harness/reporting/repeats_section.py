"""The report's repeated-samples section (--repeats K, harness/scoring/repeats.py): per run, how its K replies per
item were combined, the invalid rate per reply beside the per-item one, and the items' spread (mean sd and range,
how many items' replies disagree), with the widest items by id and their K values (no text: shareable)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

import pandas as pd

from harness.reporting.html_sections import esc, html_table
from harness.reporting.part import Part
from harness.reporting.tables import fmt, md_table
from harness.results.read import Run

HEADER = ["ref", "data", "model", "K", "reduce", "temperature", "replies", "invalid % (replies)"]
HEADER += ["invalid % (items)", "mean sd", "mean range", "items disagreeing %", "widest items (id: values)"]
WIDEST = 3


def _values(values: Sequence[float | None]) -> str:
    return ", ".join("–" if v is None else f"{v:g}" for v in values)


def section(table: pd.DataFrame, runs: Sequence[Run]) -> Part | None:
    """None when no run of the report asked more than once per item."""
    rows = []
    for r, run in zip(table.itertuples(), runs, strict=True):
        spreads = [(s.id, s.repeats) for s in run.samples if s.repeats is not None and s.error is None]
        if not spreads:
            continue
        values = [v for _, x in spreads for v in x["values"]]
        sds = [x["sd"] for _, x in spreads if x["sd"] is not None]
        ranges = [x["range"] for _, x in spreads if x["range"] is not None]
        widest = sorted((x for x in spreads if x[1]["range"]), key=lambda x: -x[1]["range"])[:WIDEST]
        settings = run.config.get("settings") or {}
        rows.append([
            r.ref, f"{r.dataset} {r.split}", r.row, str(len(spreads[0][1]["values"])), str(settings.get("reduce")),
            fmt(settings.get("temperature")), str(len(values)), fmt(100 * sum(v is None for v in values) / len(values)),
            fmt(100 * sum(x["valid"] == 0 for _, x in spreads) / len(spreads)),
            f"{statistics.fmean(sds):.3f}" if sds else "–", f"{statistics.fmean(ranges):.3f}" if ranges else "–",
            fmt(100 * sum(x > 0 for x in ranges) / len(ranges)) if ranges else "–",
            "; ".join(f"{i}: {_values(x['values'])}" for i, x in widest) or "none: every item's replies agree",
        ])  # fmt: skip
    if not rows:
        return None
    intro = (
        "Runs that asked each item K times (--repeats): an item's score is the --reduce of its replies that hold a "
        "number; it is invalid (the seeded fallback draw) only when none does, and failed when one of its requests "
        "failed. Invalid % is counted per reply and per item; sd and range are over each item's valid replies "
        "(label units). Temperature above 0 or K above 1 is another protocol than the papers' one greedy reply: such "
        "a run is never compared with their numbers.\n"
    )
    return Part(
        [intro, md_table(HEADER, rows)],
        f'<p class="help">{esc(intro.strip())}</p><div class="scroll">{html_table(HEADER, rows, "repeats")}</div>',
    )
