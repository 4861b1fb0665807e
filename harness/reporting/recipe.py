"""A paper's table with the user's runs beside it: what `run_eval.py --config <recipe> --model M` prints last.

Rows are the paper's models (its numbers as printed) and the user's models (recomputed from the run folders);
columns are the table's settings (instruction, k, and the variant where the table has several). Our cells carry
n and the invalid rate, so a run over part of the split is never read as the paper's whole-split number.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from harness.reporting.paper_settings import run_settings
from harness.reporting.published import SPLIT_SIZES, Published, match, not_comparable
from harness.results.provenance import endpoints
from harness.results.read import Run, load_run

INSTR_ORDER = {"none": 0, "short": 1, "long": 2}
Column = tuple[str, int, str]  # (instruction, k, variant)


def _column_name(col: Column, variants: int) -> str:
    instr, k, variant = col
    return f"{instr} k={k}" + (f" {variant}" if variants > 1 else "")


def _ours(run: Run) -> tuple[str, Column, str]:
    m = run.stored_metrics
    col = (run.instr, int(run.config["shots"]), run.variant)
    full = SPLIT_SIZES.get((run.config["dataset"], run.split, run.labels))
    n = m.get("n")
    if run.dry_run:
        cell = "dry run"
    elif m.get("spearman") is None:
        cell = f"– ({m.get('spearman_note') or 'no correlation'})"
    else:
        partial = f", n={n:,}" if n is not None and n != full else ""
        cell = f"{m['spearman']:.2f} (inv {m.get('invalid_pct', 0):.1f}%{partial})"
    return str(run.config["model"]), col, cell


def recipe_table(source: str, run_dirs: Sequence[Path], published: Sequence[Published]) -> str:
    """Markdown: the paper's rows of `source` and one row per model of ours, Spearman ×100 (invalid %)."""
    rows = [p for p in published if p.source == source]
    cols: list[Column] = sorted(
        {(p.instr, p.shots, p.variant) for p in rows}, key=lambda c: (c[2], INSTR_ORDER.get(c[0], 9), c[1])
    )
    variants = len({c[2] for c in cols})
    table: dict[str, dict[Column, str]] = {}
    for p in rows:
        spearman = "–" if p.spearman is None else f"{p.spearman:.2f}"
        invalid = "" if p.invalid_pct is None else f" (inv {p.invalid_pct:.1f}%)"
        table.setdefault(f"{p.model} (paper)", {})[(p.instr, p.shots, p.variant)] = spearman + invalid
    verdicts = []
    datasets = {(p.dataset, p.split, p.labels) for p in rows}
    for run_dir in run_dirs:
        run = load_run(run_dir)
        model, col, cell = _ours(run)
        if (run.config["dataset"], run.split, run.labels) not in datasets:  # never under the paper's own rows
            cell += f" (not this table's data: {run.config['dataset']} {run.split}, {run.labels} labels)"
        verdicts.append(f"- {model} {_column_name(col, 2)}: {verdict(run, published)}")
        if col not in cols:
            cols.append(col)
        table.setdefault(f"**{model}** (yours)", {})[col] = cell
    header = ["model", *(_column_name(c, variants) for c in cols)]
    lines = [f"## {source}: Spearman ×100 (invalid %)", "", "| " + " | ".join(header) + " |"]
    lines.append("|---|" + "---:|" * len(cols))
    for name, cells in table.items():
        lines.append("| " + " | ".join([name, *(cells.get(c, "") for c in cols)]) + " |")
    lines += [
        "",
        "Paper rows as published; yours recomputed from the run folders. A cell with n= covers part of the "
        "paper's split, so it is not comparable with the paper's number (the report's *Published numbers* "
        "section says why for each run).",
        "",
        "Your runs' settings beside the paper's (layout, shot stream, snapshot, answer model, truncation):",
        *verdicts,
    ]
    return "\n".join(lines) + "\n"


def _judged(run: Run, published: Sequence[Published]) -> tuple[str, Published | None, str | None]:
    """(the settings shown, the published row of the run's setting, why the run is not comparable with it or
    None): a dry run's settings judged alone (no answers yet), a real run's with its size and failures."""
    ident = run_settings(run, ", ".join(sorted({str(e["served_model"]) for e in run.extras if e.get("served_model")})))
    shown = f"template {ident['template']}, shot_sampler {ident['shot_sampler']}"
    shown += f" (seed {ident['shot_seed']})" if int(run.config["shots"]) > 0 else ""
    shown += f", answer_model {ident['answer_model']}" if ident.get("answer_model") else ""
    shown += f", truncate_input {ident['truncate_input'] or 'none'}"
    shown += f" (tokenizer revision {ident['tokenizer_revision']})" if ident.get("tokenizer_revision") else ""
    c = run.config
    p = match(
        list(published), str(c["model"]), c["dataset"], run.split, run.instr, int(c["shots"]), run.variant, run.labels
    )
    if p is None:
        return shown, None, None
    urls = endpoints(c)
    more = [f"called {', '.join(urls)}, not the provider's API"] if urls else []
    if run.dry_run:  # no answers: are the settings the paper's?
        full = SPLIT_SIZES.get((p.dataset, p.split, p.labels), 0)
        return shown, p, not_comparable(p, full, 0, ident, False, more)
    n, errors = int(run.stored_metrics.get("n") or 0), int(run.stored_metrics.get("errors") or 0)
    return shown, p, not_comparable(p, n, errors, ident, False, more)


def verdict(run: Run, published: Sequence[Published]) -> str:
    """The settings of one run that decide its number, and whether they are the published row's: a dry run's
    settings are judged alone (no answers yet), a real run's with its size and failures."""
    shown, p, why = _judged(run, published)
    if p is None:
        return f"{shown}; no published row for {run.config['model']} in this setting"
    if run.dry_run:
        if why is None:
            return f"{shown}; dry run: settings as published"
        words = "settings uncertain" if why.startswith("uncertain") else "settings not the paper's"
        return f"{shown}; dry run: {words}{why.removeprefix('uncertain').removeprefix('not comparable')}"
    return f"{shown}; " + (why or "comparable with the paper's number")


def protocol_line(run: Run, published: Sequence[Published]) -> str:
    """One line under a lone run's dry run: whether its settings are the published row's for its model and setting
    (Deshpande et al. 2023, Table 11 for `--model gpt-4 --shots 4 --instr long`), and which differ."""
    shown, p, why = _judged(run, published)
    c = run.config
    if p is None:
        where = f"{c['dataset']} {run.split}, {run.instr}, k={c['shots']}"
        return f"paper's protocol: no published row for {c['model']} in {where} ({shown})"
    row = f"{p.source}, {p.model} {p.instr} k={p.shots}"
    if why is None:
        return f"paper's protocol: yes, every setting as published for {row} ({shown})"
    if why.startswith("uncertain"):
        return f"paper's protocol: uncertain for {row}: {why.removeprefix('uncertain (').removesuffix(')')}"
    return f"paper's protocol: no, for {row} these differ: {why.removeprefix('not comparable (').removesuffix(')')}"
