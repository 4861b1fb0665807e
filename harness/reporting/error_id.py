"""The report's annotation-error identification section: every `run_eval.py errors` output inside a reported run
folder (a folder whose scores.json says "kind": "error-identification"), its numbers beside Tu et al. 2024's
Table 2, flagged as not comparable where the setup differs from theirs.

The output folder carries a manifest.json of its own (results/manifest.py check_folder): one edited since it was
written, or computed from other answers than the run folder now holds, is flagged where it is shown. The run
folder's own manifest lists only its top-level files, so a folder added inside it later does not alter the run.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from harness.reporting.html_sections import Markup, esc, html_table
from harness.reporting.part import Part
from harness.reporting.tables import fmt, md_table
from harness.results.manifest import ALTERED, Integrity, check_folder, read_run_file, read_run_json
from harness.results.provenance import endpoints
from harness.results.read import Run
from harness.variants.error_id import SCORES_KIND

# Tu et al. 2024, Table 2: F1 x100 on the held-out half of the re-annotated validation split, without clustering
# and at the best K in 1-20: distribution -> (no-cluster F1, clustered F1, best K).
PAPER_F1 = {"even": (74.3, 74.5, 3), "original": (75.4, 76.6, 10), "reannotated": (79.4, 82.4, 10)}
# Table 2's "Spear." columns: the rank labels' Spearman ×100 with the re-annotated labels, (no cluster, clustered).
PAPER_SPEARMAN = {"even": (52.9, 60.8), "original": (55.4, 59.6), "reannotated": (49.1, 65.7)}
PAPER_SETUP: dict[str, Any] = {  # what their numbers were measured with (§4.1-4.3)
    "embed_model": "text-embedding-ada-002",
    "answer_model": "gpt-3.5",  # a prefix: GPT-3.5 answered the questions (§4.1)
    "instances": 2620,  # validation rows with a valid re-annotation (the bundled file's labels other than -1)
    "k_max": 20,
}
HEADER = ["ref", "answers by", "distribution (shares of 1–5, %)", "embedding", "instances fit / held-out"]
HEADER += ["candidates", "best K", "P", "R", "F1", "F1 no cluster", "Tu et al. F1 (best K)"]
HEADER += ["Tu et al. F1 no cluster", "comparable?", "folder"]


@dataclass(frozen=True)
class Found:
    """One errors output: the run it belongs to, its scores, its integrity and why it may not be compared."""

    ref: str
    run: Run
    folder: Path
    scores: dict[str, Any]
    integrity: Integrity
    why_not: tuple[str, ...]


def find(table: pd.DataFrame, runs: Sequence[Run]) -> list[Found]:
    """The errors outputs inside the reported run folders, in report order then by folder name."""
    out = []
    for ref, run in zip(table["ref"], runs, strict=True):
        for path in sorted(run.run_dir.glob("*/scores.json")) if run.run_dir.is_dir() else []:
            if path.parent.name.startswith("."):
                continue  # a staging folder left by a killed command (results/stage.py)
            try:  # through the run files' door: a FIFO refused unread, the size bounded (results/manifest.py)
                scores = read_run_json(path.parent, path.name)
            except (OSError, ValueError):
                continue  # not an errors output this version can read
            if not isinstance(scores, dict) or scores.get("kind") != SCORES_KIND:
                continue
            integrity = check_folder(path.parent)
            out.append(Found(ref, run, path.parent, scores, integrity, tuple(why_not(scores, run, integrity))))
    return out


def _sha256(folder: Path, name: str) -> str | None:
    try:
        return hashlib.sha256(read_run_file(folder, name)).hexdigest()
    except OSError:
        return None  # unreadable (or not a file any more): not the answers the scores were computed from


def why_not(scores: dict[str, Any], run: Run, integrity: Integrity) -> list[str]:
    """Why these numbers may not be set beside Tu et al.'s (empty: the same setup, up to the halves)."""
    why = []
    if integrity.status == ALTERED:
        why.append(f"altered since it was written ({integrity.why})")
    answers = run.run_dir / "answers.jsonl"
    if answers.is_file() and _sha256(run.run_dir, answers.name) != scores.get("answers_sha256"):
        why.append("computed from other answers than the run folder's answers.jsonl")
    if scores.get("embed_model") != PAPER_SETUP["embed_model"]:
        why.append(f"embedded with {scores.get('embed_model')}, not {PAPER_SETUP['embed_model']}")
    answer_model = str(run.config.get("answer_model") or run.config.get("model"))
    if not answer_model.startswith(PAPER_SETUP["answer_model"]):
        why.append(f"answers by {answer_model}, not GPT-3.5")
    if urls := endpoints(run.config):
        why.append(f"answers from {', '.join(urls)}, not the provider's API")
    if scores.get("labels_file") is not None:
        why.append("scored against another re-annotation than Tu et al.'s (--labels-file)")
    if scores.get("instances") != PAPER_SETUP["instances"]:
        why.append(f"{scores.get('instances')} instances, not the {PAPER_SETUP['instances']:,} validly re-annotated")
    if scores.get("k_max") != PAPER_SETUP["k_max"]:
        why.append(f"K searched in 1–{scores.get('k_max')}, not 1–{PAPER_SETUP['k_max']}")
    if scores.get("distribution") not in PAPER_F1:
        why.append(f"distribution {scores.get('distribution')!r} is not in Tu et al.'s Table 2")
    return why


def cells(f: Found) -> list[Any]:
    """One row of the section's table (numbers x100, as Table 2 prints them)."""
    s = f.scores
    test, flat = s.get("test") or {}, s.get("no_cluster") or {}
    shares = ", ".join(fmt(100 * float(x), 0) for x in s.get("proportions") or [])
    paper = PAPER_F1.get(str(s.get("distribution")))
    answer_model = f.run.config.get("answer_model") or f.run.config.get("model")
    return [
        f.ref,
        answer_model,
        f"{s.get('distribution')} ({shares})",
        s.get("embed_model"),
        f"{s.get('fit_instances', '–')} / {s.get('test_instances', '–')}",
        f"{s.get('candidates', '–')} of {s.get('test_instances', '–')}",
        f"{s.get('best_k')} (of 1–{s.get('k_max')})",
        *(_x100(test.get(k)) for k in ("precision", "recall", "f1")),
        _x100(flat.get("f1")),
        f"{paper[1]} (K = {paper[2]})" if paper else "–",
        str(paper[0]) if paper else "–",
        "comparable, up to the halves" if not f.why_not else "not comparable: " + "; ".join(f.why_not),
        f.folder.name,
    ]


def _x100(v: Any) -> str:
    return fmt(100 * float(v), 1) if isinstance(v, int | float) else "–"


NOTE = (
    "From `run_eval.py errors` output folders inside the reported run folders: precision, recall and F1 (×100) of "
    "the error candidates on the held-out half against the re-annotation, at the K chosen on the fitting half "
    "(smallest among equals) and at K = 1 (no cluster), with Tu et al. 2024's Table 2 beside them. Their halves are "
    "unpublished, so even a run of their setup is scored on another random half; they report the K of the best F1 "
    "in 1–20. Table 2's Spearman columns are not computed here."
)


def section(table: pd.DataFrame, runs: Sequence[Run]) -> Part | None:
    """None when no reported run folder holds an errors output."""
    found = find(table, runs)
    if not found:
        return None
    rows = [cells(f) for f in found]
    flags = [f"{f.ref} `{f.folder.name}`: {f.integrity.why}" for f in found if f.integrity.why]
    md_rows = [[*map(str, r[:-1]), f"`{r[-1]}`"] for r in rows]
    html_rows = [[*r[:-2], _comparable(r[-2]), Markup(f"<code>{esc(r[-1])}</code>")] for r in rows]
    csv = io.StringIO()
    pd.DataFrame([_csv_row(f) for f in found]).to_csv(csv, index=False)
    return Part(
        [NOTE + "\n", md_table(HEADER, md_rows), *(["".join(f"- {x}\n" for x in flags)] if flags else [])],
        f'<p class="help">{esc(NOTE)}</p><div class="scroll">{html_table(HEADER, html_rows, "errors")}</div>'
        + ('<ul class="notes">' + "".join(f"<li>{esc(x)}</li>" for x in flags) + "</ul>" if flags else ""),
        {"error_identification.csv": csv.getvalue()},
    )


def _comparable(text: str) -> Markup | str:
    return Markup(f'<span class="nc">{esc(text)}</span>') if text.startswith("not") else text


def _csv_row(f: Found) -> dict[str, Any]:
    s, paper = f.scores, PAPER_F1.get(str(f.scores.get("distribution")))
    test, flat = s.get("test") or {}, s.get("no_cluster") or {}
    return {
        "ref": f.ref,
        "run": f.run.run_dir.name,
        "folder": f.folder.name,
        "distribution": s.get("distribution"),
        "embed_model": s.get("embed_model"),
        "fit_instances": s.get("fit_instances"),
        "test_instances": s.get("test_instances"),
        "candidates": s.get("candidates"),
        "best_k": s.get("best_k"),
        "k_max": s.get("k_max"),
        **{k: test.get(k) for k in ("precision", "recall", "f1")},
        "f1_no_cluster": flat.get("f1"),
        "paper_f1_x100": paper[1] if paper else None,  # as Table 2 prints them
        "paper_best_k": paper[2] if paper else None,
        "paper_f1_no_cluster_x100": paper[0] if paper else None,
        "not_comparable": "; ".join(f.why_not),
        "integrity": f.integrity.status,
    }
