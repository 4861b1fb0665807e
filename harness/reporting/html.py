"""index.html: one self-contained page (inline CSS, JS, data and plots; no network) with the report's tables
and plots, a sample browser per run, and two runs on the same items side by side."""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from harness.reporting import significance
from harness.reporting.html_sections import Markup, body_html, esc, html_table
from harness.reporting.markdown import live_runs, report_title, table_notes
from harness.reporting.part import Built
from harness.reporting.rowkeys import GROUP_KEYS
from harness.reporting.tables import fmt, group_title, layout, words
from harness.results.read import IDENTITY, REASONS, Run

ASSETS = Path(__file__).parent / "assets"
MAX_TEXT = 20_000  # characters of one reply or prompt kept in the page (a runaway reply would bloat it)
SAMPLE_FIELDS: tuple[str, ...] = ("id", "label", "prediction", "parsed", "reason", "finish_reason", "error")
SAMPLE_FIELDS += ("output", "prompt", "refusal", "served_model", "input_tokens", "output_tokens")
SAMPLE_FIELDS += ("reasoning", "reasoning_tokens")  # a reasoning run's thought (folded under the answer)


def json_for_script(obj: Any) -> str:
    """JSON safe inside <script type="application/json">: no "<" (so no "</script>" or "<!--"), no bare "&",
    no line separators JavaScript would choke on, and no NaN (JSON has none: it becomes null)."""
    try:
        # Straight to json's C encoder when it writes what the walk through _finite would (every number finite,
        # every key a str): the walk costs far more than the encoding on a sweep's tens of thousands of samples.
        if not _str_keys(obj):
            raise ValueError("a key that is no str: _finite converts it")
        text = json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":"), default=_numpy_scalar)
    except ValueError:  # NaN or infinity somewhere (allow_nan=False), or a key to convert
        text = json.dumps(_finite(obj), ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    for raw, safe in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(raw, safe)
    return text


def _finite(obj: Any) -> Any:
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite(v) for v in obj]
    if hasattr(obj, "item"):  # numpy scalars
        return _finite(obj.item())
    return obj


def _numpy_scalar(obj: Any) -> Any:
    """json's `default`: numpy scalars as their Python value, as _finite makes them; nothing else is JSON."""
    if hasattr(obj, "item"):
        return obj.item()
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _str_keys(obj: Any) -> bool:
    """Whether every dict inside has only str keys (json writes True as "true" where _finite writes "True").
    A list of plain scalars (a sample row) is passed over in one C-level look at its element types."""
    todo = [obj]
    while todo:
        item = todo.pop()
        if isinstance(item, dict):
            if not _SCALARS.issuperset(map(type, item.values())):
                todo.extend(item.values())
            if not all(type(k) is str for k in item):
                return False
        elif isinstance(item, list | tuple) and not _SCALARS.issuperset(map(type, item)):
            todo.extend(item)
    return True


def _clip(text: str | None) -> str | None:
    if text is None or len(text) <= MAX_TEXT:
        return text
    return text[:MAX_TEXT] + f"\n[... cut in this report: {len(text):,} characters in samples.jsonl]"


def _num(v: Any) -> float | None:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    return float(v)


def _ci_cell(r: Any, name: str) -> Markup:
    value = Markup(esc(fmt(getattr(r, name))))
    lo, hi = getattr(r, f"{name}_lo", None), getattr(r, f"{name}_hi", None)
    if _num(lo) is not None:
        value = Markup(f'{value} <span class="ci">[{esc(fmt(lo))}, {esc(fmt(hi))}]</span>')
    note = getattr(r, f"{name}_note", None)
    if isinstance(note, str) and note:
        value = Markup(f'<span class="flag" title="{esc(note)}">{value} †</span>')
    return value


def _published_cell(r: Any) -> Markup:
    if _num(r.paper_spearman) is None:
        return Markup("–")
    if isinstance(r.paper_note, str) and r.paper_note:
        return Markup(f'<span class="nc">{esc(fmt(r.paper_spearman))}<br><small>{esc(r.paper_note)}</small></span>')
    diff = f' <span class="ci">(Δ {fmt(r.diff_spearman)})</span>' if _num(r.diff_spearman) is not None else ""
    flagged = significance.cell(r)  # beyond chance? (Benjamini–Hochberg over the report's comparable cells)
    if flagged:
        how = f"Δ beyond chance? {flagged}; {significance.METHOD} over the report's comparable cells"
        diff += f'<br><small title="{esc(how)}">Δ beyond chance? {esc(flagged)}</small>'
    return Markup(f"{esc(fmt(r.paper_spearman))}{diff}")


def group_tables(table: pd.DataFrame) -> str:
    """One table per dataset/split: rows instruction × model, per k ours beside published, with CIs."""
    parts = []
    live = live_runs(table)
    for key, group in live.groupby(GROUP_KEYS, sort=False):
        wide = layout(group)
        shots = list(dict.fromkeys(k for k, _ in wide.columns))
        by_cell = {(r.instr, r.row, r.shots): r for r in group.itertuples()}
        names = ["n", "Err.", "Inv. %", "Spearman [95% CI]", "Pearson [95% CI]", "Paper Spearman"]
        top = '<th rowspan="2">Instruction</th><th rowspan="2">Model</th>'
        top += "".join(f'<th colspan="{len(names)}">k={esc(k)}</th>' for k in shots)
        sub = "".join(f"<th>{esc(n)}</th>" for _ in shots for n in names)
        body = []
        for instr, row in wide.index:
            cells = [esc(instr), esc(row)]
            for k in shots:
                r = by_cell.get((instr, row, k))
                if r is None:
                    cells += ["–"] * len(names)
                    continue
                title = f"{r.ref}: {r.run}"
                cells += [f'<span title="{esc(title)}">{esc(r.n)}</span>', esc(r.errors), esc(fmt(r.invalid_pct))]
                cells += [_ci_cell(r, "spearman"), _ci_cell(r, "pearson"), _published_cell(r)]
            body.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
        notes = "".join(f"<li>{esc(n)}</li>" for n in table_notes(group))
        parts.append(
            f"<h3>{esc(group_title(key))}</h3>"  # type: ignore[arg-type]
            f'<div class="scroll"><table class="layout"><thead><tr>{top}</tr><tr>{sub}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>" + (f'<ul class="notes">{notes}</ul>' if notes else "")
        )
    return "".join(parts) or "<p>No run with answers.</p>"


def runs_table(table: pd.DataFrame) -> Markup:
    rows = []
    for r in table.itertuples():
        settings = ", ".join(getattr(r, k) if k in ("chat", "reasoning") else f"{k}={getattr(r, k)}" for k in IDENTITY)
        status = "dry run, no answers" if r.dry_run else f"n={r.n}, errors={r.errors}, invalid {fmt(r.invalid_pct)}%"
        if words(r.served_model, ""):
            status += f"; served as {r.served_model}"
        if r.reasoning == "reasoning":  # another protocol than the paper's 20 tokens: said where it is shown
            status += f"; reasoning run: {r.thoughts:,} thoughts, {r.reasoning_tokens:,} reasoning tokens"
        reasons = ", ".join(
            f"{c}: {getattr(r, 'reason_' + c.replace('-', '_'))}"
            for c in REASONS
            if getattr(r, "reason_" + c.replace("-", "_"))
        )
        rows.append([r.ref, r.row, f"{r.dataset} {r.split}", r.instr, r.shots, status, reasons or "–", settings])
        rows[-1].append(Markup(f"<code>{esc(r.run_dir)}</code>"))
    return html_table(["ref", "model", "data", "instr", "k", "answers", "reasons", "settings", "folder"], rows, "runs")


def sample_rows(run: Run, prompts: dict[str, int]) -> list[list[Any]]:
    """The run's samples as rows of SAMPLE_FIELDS; prompts are stored once for all runs and referred to."""
    out = []
    for s, e in zip(run.samples, run.extras, strict=True):
        usage: dict[str, Any] = e["usage"] if isinstance(e.get("usage"), dict) else {}
        out.append(
            [
                s.id,
                s.label,
                s.prediction,
                s.parsed,
                e["reason"],
                e.get("finish_reason"),
                s.error,
                _clip(s.output),
                prompts.setdefault(_clip(s.prompt) or "", len(prompts)),
                e.get("refusal"),
                e.get("served_model"),
                usage.get("input_tokens"),
                usage.get("output_tokens"),
                _clip(s.reasoning),
                usage.get("reasoning_tokens"),
            ]
        )
    return out


def items_key(run: Run) -> str:
    """Runs with the same key were asked the same items against the same labels: they can be set side by side."""
    items = sorted((s.id, s.label) for s in run.samples)
    basis = [run.config["dataset"], run.config["split"], run.labels, items]
    return hashlib.sha256(json.dumps(basis, default=str).encode()).hexdigest()[:16]


def run_meta(r: Any, run: Run) -> dict[str, Any]:
    keys = ["ref", "row", "model", "dataset", "split", "instr", "shots", "n", "errors", "invalid_pct", "spearman"]
    keys += ["pearson", "spearman_lo", "spearman_hi", "run", "dry_run"]
    meta = {k: getattr(r, k, None) for k in keys}  # no CI columns when no run has labelled answers
    return meta | {"group": group_title(tuple(getattr(r, k) for k in GROUP_KEYS)), "items": items_key(run)}


def _plot_html(plots: Sequence[Path]) -> str:
    return "".join(
        f'<figure><img alt="{esc(p.stem)}" src="data:image/png;base64,{base64.b64encode(p.read_bytes()).decode()}">'
        f"<figcaption>{esc(p.name)}</figcaption></figure>"
        for p in plots
    )


def write_html(
    table: pd.DataFrame, runs: Sequence[Run], plots: Sequence[Path], path: Path, sections: Sequence[Built] = ()
) -> Path:
    """Assemble index.html from the template, its CSS and JS, the tables, the plots, every run's samples and the
    sections of reporting/sections.py that have something to show."""
    title = report_title(table)
    body = body_html(table, title, group_tables(table), runs_table(table), _plot_html(plots), sections)
    parts = {
        "TITLE": [esc(title)],
        "STYLE": [(ASSETS / "report.css").read_text(encoding="utf-8")],
        "BODY": [body],
        "DATA": _data_blocks(table, runs, title),
        "SCRIPT": [(ASSETS / "report.js").read_text(encoding="utf-8")],
    }
    template = (ASSETS / "report.html").read_text(encoding="utf-8")
    # One pass over the template, so nothing inserted (a model's reply, say) is ever read as a placeholder itself.
    # The data goes out piece by piece as it is encoded, never as one page-sized string (tens of MB for a sweep).
    pieces = re.split(r"@@([A-Z]+)@@", template)  # text, placeholder name, text, ...
    with path.open("w", encoding="utf-8") as f:  # into the report's staging folder, renamed into place whole
        for i, piece in enumerate(pieces):
            f.writelines(parts[piece] if i % 2 else [piece])
    return path


def _data_blocks(table: pd.DataFrame, runs: Sequence[Run], title: str) -> Iterator[str]:
    """The page's data: each run's samples, the prompts they share, the runs' facts; "\n" between blocks."""
    prompts: dict[str, int] = {}
    metas = []
    for r, run in zip(table.itertuples(), runs, strict=True):
        metas.append(run_meta(r, run))
        if not r.dry_run:
            yield from _script(f"samples-{r.ref}", {"fields": list(SAMPLE_FIELDS), "rows": sample_rows(run, prompts)})
            yield "\n"
    yield from _script("prompts", list(prompts))
    yield "\n"
    yield from _script("report-data", {"title": title, "runs": metas, "reasons": list(REASONS)})


def _script(element_id: str, obj: Any) -> Iterator[str]:
    """A <script type="application/json"> element holding obj, in pieces: a long list (the prompts) is encoded a
    slice at a time, which writes what json_for_script(obj) would (items joined by ",") without one huge string."""
    yield f'<script type="application/json" id="{esc(element_id)}">'
    if isinstance(obj, list) and len(obj) > _SLICE:
        yield "["
        for start in range(0, len(obj), _SLICE):
            yield ("," if start else "") + json_for_script(obj[start : start + _SLICE])[1:-1]
        yield "]"
    else:
        yield json_for_script(obj)
    yield "</script>"


_SLICE = 1000
