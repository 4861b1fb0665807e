"""The static parts of index.html: header, published numbers, warnings, and the browser's empty controls."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import pandas as pd

from harness.reporting.markdown import live_runs
from harness.reporting.part import Built
from harness.reporting.tables import LAYOUT_METRICS, fmt, words


class Markup(str):
    """HTML built here from escaped parts: table cells of this type are not escaped again."""


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _cell(value: Any) -> str:
    return value if isinstance(value, Markup) else esc(value)


def html_table(header: Sequence[Any], rows: Sequence[Sequence[Any]], cls: str = "") -> Markup:
    head = "".join(f"<th>{_cell(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_cell(c)}</td>" for c in r) + "</tr>" for r in rows)
    return Markup(f'<table class="{esc(cls)}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>')


def published_html(table: pd.DataFrame) -> str:
    matched = table[table["paper_source"].notna()]
    if not len(matched):
        return "<p>No run matches a published setting (model, dataset, split, instruction, k, variant, labels).</p>"
    rows = []
    for r in matched.itertuples():
        note = r.paper_note if isinstance(r.paper_note, str) and r.paper_note else ""
        cells: list[object] = [r.ref, f"{r.row} ({r.paper_model})", f"{r.dataset} {r.split}", r.instr, r.shots, r.n]
        cells.append(r.errors)
        for k, _ in LAYOUT_METRICS:
            cells += [fmt(getattr(r, k)), fmt(getattr(r, f"paper_{k}")), fmt(getattr(r, f"diff_{k}"))]
        match = getattr(r, "paper_match", None)
        cells.append(Markup(f'<span class="nc">{esc(note)}</span>') if note else words(match, "comparable"))
        cells.append(r.paper_source)
        rows.append(cells)
    header = ["ref", "model (published as)", "data", "instr", "k", "n", "errors"]
    header += [f"{label} {who}" for _, label in LAYOUT_METRICS for who in ("ours", "paper", "Δ")]
    return html_table([*header, "comparable?", "source"], rows, "published")


def warnings_html(table: pd.DataFrame) -> str:
    items = [esc(n) for n in table.attrs.get("notes", [])]
    for r in table[table["dry_run"].astype(bool)].itertuples():
        items.append(
            f"{esc(r.ref)} <code>{esc(r.run)}</code> ({esc(r.model)}, {esc(r.instr)}, k={esc(r.shots)}): "
            "<strong>dry run, no answers</strong>"
        )
    for r in table[table["mismatch"].astype(bool)].itertuples():
        items.append(
            f"{esc(r.ref)}: metrics.json differs from samples.jsonl ({esc(r.mismatch)}); the tables use samples.jsonl"
        )
    return '<ul class="warnings">' + "".join(f"<li>{i}</li>" for i in items) + "</ul>" if items else ""


_BROWSER = """
<section id="samples"><h2>Samples</h2>
<p class="help">Every query of one run: label, prediction (the parsed number, or the seeded fallback draw when the
reply had none), parsed value, reason code, finish reason, the raw reply and the prompt (click to open).</p>
<div class="controls">
<label>run <select id="sb-run"></select></label>
<label>reason <select id="sb-reason"><option value="">all</option></select></label>
<label>errors <select id="sb-error"><option value="">all</option><option value="only">failed requests only</option>
<option value="none">answered only</option></select></label>
<label>sort <select id="sb-sort"><option value="id">item order</option>
<option value="diff-desc">|prediction − label|, largest first</option>
<option value="diff-asc">|prediction − label|, smallest first</option></select></label>
<label>search <input id="sb-search" type="search" placeholder="reply, prompt, id, error"></label>
</div>
<p id="sb-summary" class="summary"></p>
<div class="scroll"><table id="sb-table" class="samples"><thead><tr><th>id</th><th>label</th><th>prediction</th>
<th>parsed</th><th>|pred − label|</th><th>reason</th><th>finish</th><th>reply and prompt</th></tr></thead>
<tbody></tbody></table></div>
<div class="pager"><button id="sb-prev" type="button">‹ previous</button> <span id="sb-page"></span>
<button id="sb-next" type="button">next ›</button></div>
</section>
<section id="pair"><h2>Two runs side by side</h2>
<p class="help">Two runs asked the same items (same data, split, labels and items), item by item, where they
disagree most first.</p>
<div class="controls">
<label>A <select id="sx-a"></select></label> <label>B <select id="sx-b"></select></label>
<label>show <select id="sx-filter"><option value="">all items</option>
<option value="validity">one valid, one not</option>
<option value="differ">different predictions</option></select></label>
<label>search <input id="sx-search" type="search" placeholder="either reply, id"></label>
</div>
<p id="sx-summary" class="summary"></p>
<div class="scroll"><table id="sx-table" class="samples"><thead><tr><th>id</th><th>label</th><th>A prediction</th>
<th>A reason</th><th>B prediction</th><th>B reason</th><th>|A − B|</th><th>A reply</th><th>B reply</th></tr></thead>
<tbody></tbody></table></div>
<div class="pager"><button id="sx-prev" type="button">‹ previous</button> <span id="sx-page"></span>
<button id="sx-next" type="button">next ›</button></div>
</section>
"""


def body_html(
    table: pd.DataFrame, title: str, tables: str, runs: str, plots: str, sections: Sequence[Built] = ()
) -> str:
    """The page's body; `sections`: those of reporting/sections.py with something to show, after the published
    numbers, each a <section> with its key as its id and a link in the navigation."""
    live = live_runs(table)
    summary = (
        f"{_count(len(table), 'run folder')}"
        + (f" ({_count(len(table) - len(live), 'dry run')})" if len(live) < len(table) else "")
        + ". Numbers ×100, "
        "recomputed from each run's samples.jsonl; no model was called. A published number sits beside ours only "
        "for a run over the whole published split with no failed request, under the paper's protocol."
    )
    nav = " · ".join(
        f'<a href="#{a}">{t}</a>'
        for a, t in (
            ("tables", "Tables"),
            ("published", "Published"),
            *((b.key, esc(b.title)) for b in sections),
            ("plots", "Plots"),
            ("samples", "Samples"),
            ("pair", "Side by side"),
            ("runs", "Runs"),
        )
    )
    return (
        f"<header><h1>{esc(title)}</h1><p>{esc(summary)}</p><nav>{nav}</nav></header>"
        f"{warnings_html(table)}"
        f'<section id="tables"><h2>Tables</h2><p class="help">Per k: n answered, failed requests, invalid %, '
        f"Spearman and Pearson with 95% bootstrap CIs, and the published Spearman († : see the note below the "
        f"table).</p>{tables}</section>"
        f'<section id="published"><h2>Published numbers beside ours</h2>{published_html(table)}</section>'
        + "".join(f'<section id="{esc(b.key)}"><h2>{esc(b.title)}</h2>{b.part.html}</section>' for b in sections)
        + f'<section id="plots"><h2>Plots</h2>{plots or "<p>No plot: no run with answers.</p>"}</section>'
        f"{_BROWSER}"
        f'<section id="runs"><h2>Runs</h2><div class="scroll">{runs}</div></section>'
    )


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"
