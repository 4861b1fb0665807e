"""Report sections beyond the core tables, described by one table: each is shown in report.md and index.html.

Adding a section: one module with a function `section(table, runs) -> Part | None` (the report's table of runs,
one row per run, and the runs themselves, in the same order) and one line in SECTIONS below. report.md gets a
`## title` and the part's lines, index.html a `<section id="key">` with the part's HTML and a link in the page's
navigation, and the part's files go beside report.md. Sections are built from the runs the report was given, after
a `--shareable` report has taken the C-STS text out of them (shareable.py without_csts_text).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, cast

if TYPE_CHECKING:
    import pandas as pd

    from harness.results.read import Run


@dataclass(frozen=True)
class Part:
    """What one section shows: report.md lines (under its heading), the HTML inside its <section> (built from
    escaped parts: html_sections.esc), and files written beside report.md (name -> text)."""

    markdown: list[str]
    html: str
    files: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Section:
    module: str  # holds `section(table, runs)`, imported when a report is written
    title: str  # the heading in report.md and index.html, and the link's text in the page's navigation


# One entry per section: its anchor in index.html -> its description. Shown in this order, after the built-in tables.
SECTIONS: dict[str, Section] = {
    "metrics": Section("harness.reporting.metrics_section", "More metrics"),
    "swing": Section("harness.reporting.swing_section", "Format sensitivity: the swing across templates"),
    "repeats": Section("harness.reporting.repeats_section", "Repeated samples: how K replies per item combined"),
    "errors": Section("harness.reporting.error_id", "Annotation-error identification (Tu et al. 2024, §4.2)"),
    "case": Section("harness.reporting.case_section", "Embedding settings and isotropy (Zhang et al. 2025)"),
}


class _Builder(Protocol):
    """What each module named in SECTIONS offers."""

    def section(self, table: pd.DataFrame, runs: Sequence[Run]) -> Part | None: ...


@dataclass(frozen=True)
class Built:
    """One section with something to show in this report."""

    key: str
    title: str
    part: Part


def build_sections(table: pd.DataFrame, runs: Sequence[Run]) -> list[Built]:
    """Every section of SECTIONS that has something to show for these runs, in the table's order."""
    out = []
    for key, s in SECTIONS.items():
        part = cast(_Builder, importlib.import_module(s.module)).section(table, runs)
        if part is not None:
            out.append(Built(key, s.title, part))
    return out
