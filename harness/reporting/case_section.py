"""The report's embedding-protocol section (--variant case, Zhang et al. 2025): per run, every encoding setting of
Table 1 with its Spearman and Pearson (95% CIs) and its isotropy I_iso (App. C), and the CASE projection's kept
epoch, validation Spearman, seed and weights hash, as metrics.json holds them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from harness.reporting.html_sections import esc, html_table
from harness.reporting.part import Part
from harness.reporting.tables import fmt, md_table
from harness.results.read import Run

HEADER = [
    "ref", "data", "model", "inputs", "pooling", "setting", "n", "Spearman [95% CI]", "Pearson [95% CI]",
    "I_iso (mean ± sd)", "cos to mean (mean ± sd)",
]  # fmt: skip


def _spread(mean: object, sd: object, digits: int) -> str:
    """`mean ± sd`; the mean alone for a run from before the sd was kept; – for none."""
    if not isinstance(mean, (int, float)):
        return "–"
    return f"{mean:.{digits}f}" + (f" ± {sd:.{digits}f}" if isinstance(sd, (int, float)) else "")


def _pooling(case: dict[str, Any]) -> str:
    """What was pooled (text / whole), the encoder's method and whether its vectors came normalised."""
    parts = [str(case.get("pooling") or "whole")]
    if case.get("pooling_method"):
        parts.append(str(case["pooling_method"]))
    if "normalized" in case:
        parts.append("normalised" if case["normalized"] else "not normalised")
    return ", ".join(parts)


def _ci(m: dict[str, Any], name: str) -> str:
    low, high = (m.get(f"{name}_ci") or [None, None])[:2]
    return f"{fmt(m.get(name))} [{fmt(low)}, {fmt(high)}]"


def section(table: pd.DataFrame, runs: Sequence[Run]) -> Part | None:
    """None when no run of the report is an embedding-protocol run."""
    rows, notes = [], []
    for r, run in zip(table.itertuples(), runs, strict=True):
        case = run.stored_metrics.get("case") if run.config.get("variant") == "case" else None
        if not isinstance(case, dict):
            continue
        data, model = f"{run.config.get('dataset')} {run.split}", str(run.config.get("model"))
        for setting, m in (case.get("settings") or {}).items():
            mark = " (scored)" if setting == case.get("setting") else ""
            iso = _spread(m.get("isotropy"), m.get("isotropy_sd"), 4)
            c = m.get("cos_to_mean") if isinstance(m.get("cos_to_mean"), dict) else {}
            cells = [r.ref, data, model, case.get("inputs", ""), _pooling(case), setting + mark, str(m.get("n"))]
            rows.append([*cells, _ci(m, "spearman"), _ci(m, "pearson"), iso, _spread(c.get("mean"), c.get("sd"), 3)])
        ffn = case.get("ffn")
        if isinstance(ffn, dict):
            notes.append(
                f"{r.ref}: CASE projection ({ffn.get('kind')}, {ffn.get('input_setting')} -> {ffn.get('dim')} dims, "
                f"seed {ffn.get('seed')}): epoch {ffn.get('best_epoch')} of {ffn.get('epochs')} kept, validation "
                f"Spearman {fmt(ffn.get('validation_spearman'))}; weights {ffn.get('weights')} sha256 "
                f"{ffn.get('weights_sha256')}; trained on {ffn.get('trained_on', 'the train split')}, epoch chosen on "
                f"{ffn.get('epoch_chosen_on', 'the validation split')}"
                + (f" ({ffn['note']})" if ffn.get("note") else "")
            )
    if not rows:
        return None
    intro = (
        "Every encoding setting of Zhang et al. (2025) Table 1 from the same embeddings: `cond` f(c; I(s)), `sent` "
        "f(s; I(c)), `-c` with the condition's own embedding f(c; I(∅)) subtracted, `plain` the sentence alone "
        "(docs/embeddings.md). Pooling: text, only the encoded text's tokens pooled (the paper's §3.1), or whole, the "
        "instruction's too; then the encoder's pooling method and whether its vectors came normalised. CIs resample "
        "sentence pairs (C-STS) as the tables above; I_iso is Durdy et al.'s isotropy over 1,000 random directions "
        "(1 = isotropic), mean ± sd over 10 seeded draws; cos to mean is each vector's cosine with the mean vector "
        "(Table 8: peaked near 1 = anisotropic). The paper's numbers are on its own test part of its "
        "own re-annotation: none is comparable with these.\n"
    )
    bullets = "".join(f"- {n}\n" for n in notes)
    return Part(
        [intro, md_table(HEADER, rows), *([bullets] if bullets else [])],
        f'<p class="help">{esc(intro.strip())}</p><div class="scroll">{html_table(HEADER, rows, "case")}</div>'
        + (f'<ul class="notes">{"".join(f"<li>{esc(n)}</li>" for n in notes)}</ul>' if notes else ""),
    )
