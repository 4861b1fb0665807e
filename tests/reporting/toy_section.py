"""A toy report section for tests/reporting/test_new_section.py, added as docs/extending.md says: this module's
`section(table, runs)` and one entry in harness/reporting/sections.py SECTIONS (the test adds it).

It shows each run's mean prediction and the item whose prediction is farthest from its label."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from harness.reporting.html_sections import esc, html_table
from harness.reporting.part import Part
from harness.reporting.tables import md_table
from harness.results.read import Run


def section(table: pd.DataFrame, runs: Sequence[Run]) -> Part | None:
    rows = []
    for ref, run in zip(table["ref"], runs, strict=True):
        scored = [s for s in run.samples if s.prediction is not None and s.label is not None]
        if scored:
            mean = sum(float(s.prediction) for s in scored) / len(scored)  # type: ignore[arg-type]
            worst = max(scored, key=lambda s: (abs(float(s.prediction) - float(s.label)), s.id))  # type: ignore[arg-type]
            rows.append([ref, f"{mean:.3f}", worst.id])
    if not rows:
        return None
    header = ["ref", "mean prediction", "farthest item"]
    csv = "".join(",".join(r) + "\n" for r in [header, *rows])
    return Part(
        [md_table(header, rows)], f"<p>{esc('Toy section.')}</p>{html_table(header, rows, 'toy')}", {"toy.csv": csv}
    )
