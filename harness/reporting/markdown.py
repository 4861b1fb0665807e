"""report.md and the files beside it: one table per dataset/split (md, csv, tex), runs.csv, published.csv."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from harness.reporting import significance
from harness.reporting.part import Built
from harness.reporting.rowkeys import GROUP_KEYS
from harness.reporting.tables import (
    DATASET_NAMES,
    LAYOUT_METRICS,
    fmt,
    group_name,
    group_title,
    layout,
    layout_csv,
    layout_latex,
    layout_markdown,
    md_table,
    side_by_side,
    words,
)
from harness.results.read import REASONS
from harness.scoring.stats import small_run_note

REASON_COLUMNS = REASONS


def report_title(table: pd.DataFrame) -> str:
    """The datasets the report holds, by name: "C-STS and STS-B prompting report"."""
    names = [DATASET_NAMES.get(d, d) for d in dict.fromkeys(table["dataset"])]
    joined = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return f"{joined} prompting report"


def live_runs(table: pd.DataFrame) -> pd.DataFrame:
    return table[~table["dry_run"].astype(bool)]


def table_notes(group: pd.DataFrame) -> list[str]:
    """Footnotes of one table: what a baseline is, correlations that rest on few items or none, published numbers
    not comparable."""
    from harness.calling.backends.offline import BASELINE_NOTES

    notes = [f"{m}: {BASELINE_NOTES[m]}" for m in dict.fromkeys(group["model"]) if m in BASELINE_NOTES]
    for r in group.itertuples():
        where = f"{r.ref} ({r.row}, {r.instr}, k={r.shots})"
        if words(getattr(r, "integrity_note", None), ""):
            notes.append(f"{where}: {r.integrity_note}")
        for name in ("spearman", "pearson"):
            note = getattr(r, f"{name}_note", None)
            if isinstance(note, str) and note:
                notes.append(f"{where}: {name.capitalize()} {note}")
        if words(r.paper_note, ""):
            notes.append(f"{where}: published Spearman {fmt(r.paper_spearman)} is {r.paper_note}")
        elif significance.cell(r):
            notes.append(
                f"{where}: Δ to the published Spearman {fmt(r.paper_spearman)} beyond chance? {significance.cell(r)}"
            )
        small = small_run_note(int(r.n), _number(r.spearman)) if _number(r.n) is not None else None
        if small is not None:  # its interval beside it: the number is a range, not a point
            notes.append(f"{where}: {small}; its 95% bootstrap CI is {_ci(r, 'spearman').split(' ', 1)[1]}")
    if any(significance.cell(r) for r in group.itertuples()):  # the flags shown: their method named beside them
        notes.append(significance.describe(group).strip())
    return notes


def _number(value: object) -> float | None:
    """A table cell's number, or None for a missing one (None or NaN)."""
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)  # type: ignore[arg-type]


def render_report(
    table: pd.DataFrame,
    out: Path,
    plots: list[Path],
    sections: Sequence[Built] = (),
) -> list[Path]:
    """Write runs.csv, one table per dataset/split (md, csv, tex), side_by_side.csv, published.csv and report.md;
    `sections`: those of reporting/sections.py SECTIONS with something to show, and their files."""
    table = table.reset_index(drop=True)
    files = [out / "runs.csv"]
    table.to_csv(files[0], index=False, float_format="%.4f")
    md = [
        f"# {report_title(table)}\n",
        "Numbers are ×100, recomputed from each run's `samples.jsonl` (no model was called). Every row cites its "
        "run folder in the *Runs* section; `runs.csv` holds every number with its folder; `index.html` shows "
        "the samples. A published number sits beside ours only for a run over the whole published split with "
        "no failed request, under the paper's protocol; others are marked *not comparable*.\n",
    ]
    live = live_runs(table)
    for key, group in live.groupby(GROUP_KEYS, sort=False):
        wide = layout(group)
        stem = f"table_{group_name(key)}"  # type: ignore[arg-type]
        title = group_title(key)  # type: ignore[arg-type]
        caption = f"{title}: n, failed requests, invalid outputs (%), Pearson and Spearman (x100)."
        for suffix, text in (
            ("md", layout_markdown(wide)),
            ("csv", layout_csv(wide)),
            ("tex", layout_latex(wide, caption)),
        ):
            (out / f"{stem}.{suffix}").write_text(text, encoding="utf-8")
            files.append(out / f"{stem}.{suffix}")
        notes = table_notes(group)
        md += [f"## {title}\n", layout_markdown(wide), *([_bullets(notes)] if notes else [])]
    md += _dry_run_section(table)
    md += _side_by_side_section(table, out, files)
    md += _published_section(table, out, files)
    md += _reasons_section(live)
    md += _uncertainty_section(live)
    for built in sections:
        md += [f"## {built.title}\n", *built.part.markdown]
        for name, text in built.part.files.items():
            (out / name).write_text(text, encoding="utf-8")
            files.append(out / name)
    if plots:
        md += ["## Plots\n", *(f"![{p.stem.replace('_', ' ')}]({p.name})\n" for p in plots)]
    md += [
        "## Runs\n",
        md_table(["ref", "row", "run folder"], [[r.ref, r.row, f"`{r.run_dir}`"] for r in table.itertuples()]),
    ]
    md += [_bullets(table.attrs.get("notes", []))] if table.attrs.get("notes") else []
    bad = table[table["mismatch"].astype(bool)]
    if len(bad):
        md.append(
            "\n**Warning**: metrics.json differs from samples.jsonl for "
            + ", ".join(f"{r.ref} ({r.mismatch})" for r in bad.itertuples())
            + "; the tables use samples.jsonl.\n"
        )
    (out / "report.md").write_text("\n".join(md), encoding="utf-8")
    files.append(out / "report.md")
    return files


def _bullets(lines: list[str]) -> str:
    return "".join(f"- {line}\n" for line in lines)


def _dry_run_section(table: pd.DataFrame) -> list[str]:
    dry = table[table["dry_run"].astype(bool)]
    if not len(dry):
        return []
    lines = [f"{r.ref} `{r.run}` ({r.model}, {r.instr}, k={r.shots}): dry run, no answers" for r in dry.itertuples()]
    return ["## Dry runs\n", "These folders hold rendered prompts only; no model was asked.\n", _bullets(lines)]


def _side_by_side_section(table: pd.DataFrame, out: Path, files: list[Path]) -> list[str]:
    sbs = side_by_side(table)
    if not len(sbs):
        return []
    sbs.to_csv(out / "side_by_side.csv", index=False, float_format="%.4f")
    files.append(out / "side_by_side.csv")
    rows = [
        [
            f"{r.ref_csts} / {r.ref_stsb}",
            r.row_csts,
            r.instr,
            str(r.shots),
            f"{r.n_csts} / {r.n_stsb}",
            f"{r.errors_csts} / {r.errors_stsb}",
            f"{fmt(r.invalid_pct_csts)} / {fmt(r.invalid_pct_stsb)}",
            fmt(r.spearman_csts),
            fmt(r.spearman_stsb),
            fmt(r.spearman_gap),
            fmt(r.pearson_csts),
            fmt(r.pearson_stsb),
            fmt(r.pearson_gap),
        ]
        for r in sbs.itertuples()
    ]
    header = ["refs", "Model", "Instruction", "k", "n (C-STS / STS-B)", "errors", "invalid %"]
    header += ["C-STS Spearman", "STS-B Spearman", "gap"]
    return [
        "## C-STS beside STS-B (gap = STS-B − C-STS)\n",
        md_table([*header, "C-STS Pearson", "STS-B Pearson", "gap"], rows),
    ]


def _published_section(table: pd.DataFrame, out: Path, files: list[Path]) -> list[str]:
    matched = table[table["paper_source"].notna()]
    if not len(matched):
        return [
            "## Published numbers\n",
            "No run matches a published setting (model, dataset, split, instruction, k, variant, labels).\n",
        ]
    cols = ["ref", "dataset", "split", "variant", "labels", "model", "paper_model", "instr", "shots", "n", "errors"]
    nums = [c for k, _ in LAYOUT_METRICS for c in (k, f"paper_{k}", f"diff_{k}")]
    extra = ["paper_p", "paper_q", "paper_differs", "paper_note", "paper_match", "paper_source", "run"]
    matched[[*cols, *nums, *extra]].to_csv(out / "published.csv", index=False, float_format="%.4f")
    files.append(out / "published.csv")
    rows = []
    for r in matched.itertuples():
        cells = []
        for k, _ in LAYOUT_METRICS:
            cells += [fmt(getattr(r, k)), fmt(getattr(r, f"paper_{k}")), fmt(getattr(r, f"diff_{k}"))]
        data = f"{r.dataset} {r.split}"
        rows.append([r.ref, f"{r.row} ({r.paper_model})", data, r.instr, str(r.shots), str(r.n), str(r.errors)])
        rows[-1] += [*cells, significance.cell(r) or "–"]
        rows[-1] += [words(r.paper_note, words(getattr(r, "paper_match", None), "comparable")), r.paper_source]
    header = ["ref", "model (published as)", "data", "instr", "k", "n", "errors"]
    header += [f"{label} {who}" for _, label in LAYOUT_METRICS for who in ("ours", "paper", "Δ")]
    header += [f"Δ beyond chance? ({significance.METHOD})", "comparable?", "source"]
    described = significance.describe(table)
    return [
        "## Published numbers beside ours (Δ = ours − paper, only where comparable)\n",
        md_table(header, rows),
        *([described] if described else []),
    ]


def _reasons_section(live: pd.DataFrame) -> list[str]:
    if not len(live):
        return []
    rows = []
    for r in live.itertuples():
        counts = [str(getattr(r, f"reason_{c.replace('-', '_')}", 0)) for c in REASON_COLUMNS]
        thinking = _thinking(r)
        rows.append([r.ref, r.row, r.instr, str(r.shots), *counts, words(r.reasons_other, ""), thinking,
                     words(r.served_model)])  # fmt: skip
    header = ["ref", "model", "instr", "k", *REASON_COLUMNS, "other", "reasoning", "served model"]
    note = (
        "Why each reply scored as it did: `number` (a number parsed), `no-number` (invalid: fallback draw), "
        "`echo` (the number came from an echoed prompt fragment), `out-of-range`, `refusal`, `cut-off` (the "
        "reply hit its token limit), `thinking-cut-off` (the budget ran out while the model was still thinking: "
        "no answer, fallback draw), `error` (the request failed; no prediction). `reasoning`: a reasoning run's "
        "thoughts kept and reasoning tokens billed; such a run is another protocol than the paper's 20 tokens and "
        "is never compared with its numbers. Runs written before reason "
        "codes existed get them derived from `valid`, `error` and `parsed`.\n"
    )
    return ["## Reply reasons\n", note, md_table(header, rows)]


def _thinking(r: Any) -> str:
    """A run's reasoning in words: "no", or "yes" with its thoughts kept and reasoning tokens billed."""
    if getattr(r, "reasoning", "no reasoning") != "reasoning":
        return "no"
    tokens = int(getattr(r, "reasoning_tokens", 0) or 0)
    return f"yes: {int(getattr(r, 'thoughts', 0) or 0):,} thoughts, {tokens:,} reasoning tokens"


def _ci(row: Any, name: str) -> str:
    lo, hi = getattr(row, f"{name}_lo", None), getattr(row, f"{name}_hi", None)
    return f"{fmt(getattr(row, name))} [{fmt(lo)}, {fmt(hi)}]"


def _mean_sd(row: Any, name: str) -> str:
    mean = getattr(row, f"{name}_fallback_mean", None)
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "no invalid outputs"
    return f"{fmt(mean)} ± {fmt(getattr(row, f'{name}_fallback_sd', None))}"


def _uncertainty_section(table: pd.DataFrame) -> list[str]:
    rows = []
    for r in table.itertuples():
        undefined = r.spearman is None or (isinstance(r.spearman, float) and math.isnan(r.spearman))
        if r.dry_run or not r.n or (undefined and not words(r.spearman_note, "")):
            continue  # a run with no answers, or none whose correlation says why it is missing
        common = "–" if pd.isna(r.n_common) else f"{fmt(r.spearman_common)} (n={int(r.n_common)})"
        rows.append(
            [
                r.ref,
                r.dataset,
                r.row,
                r.instr,
                str(r.shots),
                str(r.n),
                str(r.errors),
                fmt(r.invalid_pct),
                f"– ({r.spearman_note})" if undefined else _ci(r, "spearman"),  # constant answers: said, not dropped
                f"– ({r.pearson_note})" if undefined else _ci(r, "pearson"),
                _mean_sd(r, "spearman"),
                f"{fmt(r.spearman_valid)} (n={'–' if pd.isna(r.n_valid) else int(r.n_valid)})",
                common,
            ]
        )
    header = ["ref", "data", "model", "instr", "k", "n", "errors", "invalid %", "Spearman [95% CI]", "Pearson [95% CI]"]
    header += ["Spearman over fallback seeds (mean ± sd)", "Spearman, valid only", "Spearman, items all parsed"]
    note = (
        "95% percentile bootstrap, 1,000 resamples; C-STS resamples sentence pairs (both conditions together), "
        "STS-B resamples items. The fallback spread redraws the invalid outputs' uniform fallback under seeds 0–19. "
        "*Items all parsed*: the items every run of the same dataset and split answered validly.\n"
    )
    return ["## Uncertainty\n", note, md_table(header, rows)] if rows else []
