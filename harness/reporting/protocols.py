"""Parsed, expected and constrained scores of one model side by side, with CIs and paired comparisons.

Three protocols score the same prompts differently: the paper's first number of the reply (parsed, with the
seeded fallback for invalid replies), the probability-weighted score of the first output token (expected,
`--scoring expected`, stored beside the parsed one in the same run) and the answer forced into the scale
(`--constrain`, a run of its own). Runs of one model, dataset, split, labels, instruction and k are gathered;
where they hold two protocols or more, each gets its Spearman with a bootstrap CI, and every pair a paired
comparison on the items both scored (harness/scoring/stats.py). Only the parsed protocol is the paper's.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.datasets.choose import run_description
from harness.reporting.html_sections import Markup, esc, html_table
from harness.reporting.part import Part
from harness.reporting.tables import md_table
from harness.results.read import Run
from harness.scoring.metrics import correlation_note
from harness.scoring.stats import bootstrap_ci, compare_paired

_KEY = ("model", "dataset", "split", "labels", "variant", "shots")


@dataclass(frozen=True)
class Column:
    """One protocol's scores from one run: {item id: score} over the items it scored, with gold labels."""

    name: str  # e.g. "R2 expected"
    protocol: str  # parsed | expected | constrained
    run: Run
    scores: dict[str, float]
    gold: dict[str, float]
    answered: int  # replies without a request error
    invalid: int  # parsed/constrained: replies scored by the fallback; expected: replies without an expected score


def columns_of(run: Run, ref: str) -> list[Column]:
    """The protocols a run holds: parsed or constrained (its predictions), and expected where it has them."""
    answered = [s for s in run.samples if s.error is None and s.prediction is not None and s.label is not None]
    gold = {s.id: float(s.label) for s in answered}  # type: ignore[arg-type]
    protocol = "constrained" if run.identity().get("constrain") else "parsed"
    main = {s.id: float(s.prediction) for s in answered}  # type: ignore[arg-type]
    out = [Column(f"{ref} {protocol}", protocol, run, main, gold, len(answered), sum(not s.valid for s in answered))]
    expected = {s.id: float(s.expected) for s in answered if s.expected is not None}
    if expected:
        missing = len(answered) - len(expected)
        out.append(Column(f"{ref} expected", "expected", run, expected, gold, len(answered), missing))
    return out


def _key(run: Run) -> tuple[object, ...]:
    c = run.config
    return (*(c.get(k) for k in _KEY), run.identity().get("template"))


_INTRO = (
    "The same prompts scored three ways: *parsed* (the paper's first number, fallback draws included), "
    "*expected* (probability-weighted score of the first output token; replies without one are left out) and "
    "*constrained* (the backend forced the reply into the scale). Only *parsed* is the paper's protocol; "
    "the others are never comparable with published numbers. *prompt* says how each run sent its prompts: "
    "*raw* text, as the paper sent open models, or *chat* (`--chat`: the chat template or a chat message). "
    "Spearman ×100 with 95% bootstrap CIs; paired comparisons on the items both protocols scored."
)
_TICK = "`"
_LEVELS = ["column", "protocol", "prompt", "n", "invalid", "Spearman", "95% CI", "run"]
_PAIRS = ["A − B", "n", "A", "B", "A − B", "95% CI", "p (paired bootstrap)", "p (Williams)"]
_MIXED = (
    "These columns mix prompt forms (a `--chat` run beside raw-text runs): a difference between a chat "
    "and a raw column is the prompt form's and the protocol's together."
)


def section(table: pd.DataFrame, runs: Sequence[Run], n_resamples: int = 1000, seed: int = 0) -> Part | None:
    """The report's "Protocols" section (reporting/sections.py), in report.md and index.html alike: None when no
    model has two protocols on the same items."""
    groups: dict[tuple[object, ...], list[Column]] = defaultdict(list)
    for run, ref in zip(runs, table["ref"], strict=True):
        if not run.dry_run:
            groups[_key(run)].extend(columns_of(run, str(ref)))
    md: list[str] = []
    html = f'<p class="help">{esc(_INTRO.replace("*", "").replace(_TICK, ""))}</p>'
    for key, cols in groups.items():
        if len({c.protocol for c in cols}) < 2:
            continue
        title = f"{key[0]} · {key[1]} {key[2]} · k={key[5]}"
        levels, notes = _levels(cols, n_resamples, seed)
        pairs = _pairs(cols, n_resamples, seed)
        if len({prompt_form(c.run) for c in cols}) > 1:  # a difference between these columns is not the protocol's
            notes.append(_MIXED)
        md += [
            f"### {title}\n",
            md_table(_LEVELS, levels) + ("\n" if notes else "") + "".join(f"- {n}\n" for n in notes),
        ]
        md += [md_table(_PAIRS, pairs)]
        cells = [[*r[:-1], Markup(f"<code>{esc(r[-1].strip(_TICK))}</code>")] for r in levels]  # no markdown
        items = "".join(f"<li>{esc(n.replace(_TICK, ''))}</li>" for n in notes)
        html += f'<h3>{esc(title)}</h3><div class="scroll">{html_table(_LEVELS, cells, "protocols")}</div>'
        html += f'<ul class="notes">{items}</ul>' if notes else ""
        html += f'<div class="scroll">{html_table(_PAIRS, pairs, "protocols")}</div>'
    if not md:
        return None
    return Part([_INTRO + "\n", *md], html)


def _items(col: Column) -> list[str]:
    return sorted(col.scores, key=id_order)


def _levels(cols: Sequence[Column], n_resamples: int, seed: int) -> tuple[list[list[str]], list[str]]:
    """Each column's row, and the notes under them."""
    rows, notes = [], []
    for c in cols:
        ids = _items(c)
        pred, gold = [c.scores[i] for i in ids], [c.gold[i] for i in ids]
        ci = bootstrap_ci(pred, gold, _groups(c, ids), n_resamples, seed)["spearman"]
        what = "without an expected score" if c.protocol == "expected" else "invalid (fallback)"
        invalid = f"{100 * c.invalid / max(c.answered, 1):.1f}% {what}"
        # A column with one score throughout (Gemma-3-270M's expected score: 1.0 for every item) or mostly one
        # is marked where its Spearman stands, with the reason under the table (the CI already shows small n).
        why = correlation_note(np.array(pred, dtype=float), np.array(gold, dtype=float))
        why = "; ".join(part for part in (why or "").split("; ") if part and not part.startswith("n="))
        notes += [f"† {c.name}: {why}"] if why else []
        rows.append(
            [c.name, c.protocol, prompt_form(c.run), str(len(ids)), invalid,
             _f(ci.estimate) + (" †" if why else ""), f"[{_f(ci.low)}, {_f(ci.high)}]", f"`{c.run.run_dir}`"]
        )  # fmt: skip
    return rows, notes


def prompt_form(run: Run) -> str:
    """How the run's prompts went out: "chat" (the model's chat template or a chat message, --chat) or "raw"
    (the text as the paper sent open models); "?" for a run that does not say."""
    chat = run.identity().get("chat")
    return "?" if chat is None else "chat" if chat else "raw"


def _pairs(cols: Sequence[Column], n_resamples: int, seed: int) -> list[list[str]]:
    rows = []
    for a, b in itertools.combinations(cols, 2):
        ids = sorted(a.scores.keys() & b.scores.keys(), key=id_order)
        r = compare_paired(
            [a.scores[i] for i in ids], [b.scores[i] for i in ids], [a.gold[i] for i in ids],
            _groups(a, ids), "spearman", n_resamples, seed,
        )  # fmt: skip
        p = "–" if r.p_bootstrap is None else f"{r.p_bootstrap:.4f}"
        pw = "–" if r.p_williams is None else f"{r.p_williams:.4g}"
        rows.append(
            [f"{a.name} − {b.name}", str(r.n), _f(r.a), _f(r.b), _f(r.diff), f"[{_f(r.low)}, {_f(r.high)}]", p, pw]
        )
    return rows


def _groups(col: Column, ids: Sequence[str]) -> list[str] | None:
    """Bootstrap clusters as reporting/report.py `groups_of` makes them (not imported: report.py imports this
    module): C-STS sentence pairs, both conditions together; STS-B items on their own."""
    if not run_description(col.run.config).conditions:
        return None
    by_id = {s.id: s for s in col.run.samples}
    return [by_id[i].pair or str(int(i) // 2) for i in ids]


def id_order(i: str) -> tuple[int, str]:
    return (int(i), i) if i.isdigit() else (1 << 62, i)


def _f(v: float | None) -> str:
    return "–" if v is None else f"{v:.2f}"
