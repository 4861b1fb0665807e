"""The report's format-sensitivity section: where runs differ only in their prompt's template or instruction level
(same model, data, items, k and every other setting), how far Spearman moves between them (max − min, the best and
the worst format) beside each one's 95% CI. Researchers report this swing beside a score: it can be larger than the
differences between the models compared."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from harness.reporting.html_sections import esc, html_table
from harness.reporting.part import Part
from harness.reporting.tables import fmt, md_table
from harness.results.read import Run

HEADER = ["refs", "data", "model", "k", "n", "Spearman [95% CI] per format", "swing (max − min)", "best", "worst"]
FORMAT = ("template",)  # what may differ within a group (the instruction level is the template's: none.j2, ...)


def _key(r: Any, run: Run) -> tuple[Any, ...]:
    """Everything but the format: a group's runs differ only in it."""
    others = tuple(sorted((k, str(v)) for k, v in run.identity().items() if k not in FORMAT))
    return (r.dataset, r.split, r.labels, r.variant, str(r.model), int(r.shots), *others)


def _number(v: Any) -> float | None:
    return None if v is None or pd.isna(v) else float(v)


def section(table: pd.DataFrame, runs: Sequence[Run]) -> Part | None:
    """None when no two runs of the report differ only in their format."""
    groups: dict[tuple[Any, ...], list[Any]] = {}
    for r, run in zip(table.itertuples(), runs, strict=True):
        if not r.dry_run and _number(r.spearman) is not None:
            groups.setdefault(_key(r, run), []).append(r)
    rows = []
    for members in groups.values():
        if len({m.template for m in members}) < 2:
            continue
        ranked = sorted(members, key=lambda m: -float(m.spearman))
        best, worst = ranked[0], ranked[-1]
        top = ", ".join(m.template for m in ranked if m.spearman == best.spearman)  # ties named together
        bottom = ", ".join(m.template for m in ranked if m.spearman == worst.spearman)
        formats = "; ".join(
            f"{m.template} {fmt(m.spearman)} [{fmt(m.spearman_lo)}, {fmt(m.spearman_hi)}]" for m in ranked
        )
        n = "/".join(dict.fromkeys(str(m.n) for m in members))
        rows.append([
            ", ".join(m.ref for m in members), f"{best.dataset} {best.split}", best.row, str(best.shots), n, formats,
            fmt(float(best.spearman) - float(worst.spearman)), top, bottom if bottom != top else "(all tie)",
        ])  # fmt: skip
    if not rows:
        return None
    intro = (
        "Runs that differ only in the prompt's template (instruction level): the same model, data, items, k and "
        "every other setting. Swing = the best format's Spearman − the worst's (×100), beside each format's 95% "
        "bootstrap CI: a swing wider than the CIs is the prompt's doing, not the items' sampling. An offline baseline "
        "that reads only the two sentences (overlap) swings 0 by construction.\n"
    )
    return Part(
        [intro, md_table(HEADER, rows)],
        f'<p class="help">{esc(intro.strip())}</p><div class="scroll">{html_table(HEADER, rows, "swing")}</div>',
    )
