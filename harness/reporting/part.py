"""What a report section is (harness/reporting/sections.py SECTIONS): the part one section shows, the table's
line, and a section built for one report."""

from __future__ import annotations

from dataclasses import dataclass, field


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


@dataclass(frozen=True)
class Built:
    """One section with something to show in this report."""

    key: str
    title: str
    part: Part
