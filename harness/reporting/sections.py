"""Report sections beyond the core tables, described by one table (and only the table: what a section is, is
harness/reporting/part.py; building them, harness/reporting/report.py): each is shown in report.md and index.html.

Adding a section: one module with a function `section(table, runs) -> Part | None` (the report's table of runs,
one row per run, and the runs themselves, in the same order) and one line in SECTIONS below. report.md gets a
`## title` and the part's lines, index.html a `<section id="key">` with the part's HTML and a link in the page's
navigation, and the part's files go beside report.md. Sections are built from the runs the report was given, after
a `--shareable` report has taken the C-STS text out of them (shareable.py without_csts_text).
"""

from __future__ import annotations

from harness.reporting.part import Part, Section

__all__ = ["SECTIONS", "Part", "Section"]


# One entry per section: its anchor in index.html -> its description. Shown in this order, after the built-in tables.
SECTIONS: dict[str, Section] = {
    "protocols": Section("harness.reporting.protocols", "Protocols: parsed, expected, constrained"),
    "metrics": Section("harness.reporting.metrics_section", "More metrics"),
    "swing": Section("harness.reporting.swing_section", "Format sensitivity: the swing across templates"),
    "repeats": Section("harness.reporting.repeats_section", "Repeated samples: how K replies per item combined"),
    "errors": Section("harness.reporting.error_id", "Annotation-error identification (Tu et al. 2024, §4.2)"),
    "case": Section("harness.reporting.case_section", "Embedding settings and isotropy (Zhang et al. 2025)"),
}
