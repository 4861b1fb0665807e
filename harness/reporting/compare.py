"""Two runs on the same items, compared: paired cluster bootstrap and Williams' test (Steiger 1980)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from harness.datasets.choose import run_description
from harness.reporting.integrity import note
from harness.reporting.report import groups_of, id_order
from harness.results.manifest import ALTERED
from harness.results.read import Run, load_run
from harness.scoring.metrics import correlation_note
from harness.scoring.stats import compare_paired
from harness.types import HarnessError, Scored


def same_items(a: Run, b: Run) -> None:
    """Refuse, in one line, two runs that were not asked the same items against the same labels. Runs may
    differ in anything else (model, backend, prompt, k): that is what a comparison is for."""
    for name, run in (("A", a), ("B", b)):
        if run.dry_run:
            raise HarnessError(f"run {name} ({run.run_dir}) is a dry run, no answers: nothing to compare")
    for key in ("dataset", "split"):
        if a.config[key] != b.config[key]:
            raise HarnessError(f"runs differ in {key} ({a.config[key]} vs {b.config[key]}): not the same items")
    if a.labels != b.labels:
        raise HarnessError(f"runs are scored against different labels ({a.labels} vs {b.labels})")
    ids_a, ids_b = {s.id for s in a.samples}, {s.id for s in b.samples}
    if ids_a != ids_b:
        raise HarnessError(
            f"runs are on different items: A has {len(ids_a):,}, B has {len(ids_b):,}, {len(ids_a & ids_b):,} shared "
            "(a different --limit or --subset?); compare runs over the same items"
        )
    labels_b = {s.id: s.label for s in b.samples}
    differ = [s.id for s in a.samples if s.label != labels_b[s.id]]
    if differ:
        raise HarnessError(
            f"runs label {len(differ):,} of their items differently (item {differ[0]} first): not the same data"
        )


def _usable(run: Run, valid_only: bool) -> dict[str, Scored]:
    return {
        s.id: s
        for s in run.samples
        if s.error is None and s.prediction is not None and s.label is not None and (s.valid or not valid_only)
    }


def _f(v: float | None) -> str:
    return "–" if v is None else f"{v:.2f}"


def compare_runs(a_dir: Path, b_dir: Path, n_resamples: int = 2000, seed: int = 0) -> str:
    """A paired comparison of two runs on the same items, as text that names both run folders."""
    a, b = load_run(a_dir), load_run(b_dir)
    same_items(a, b)
    lines = [
        f"A: {a.run_dir} ({a.config['model']}){_invalid(a)}",
        f"B: {b.run_dir} ({b.config['model']}){_invalid(b)}",
        "",
    ]
    for name, run in (("A", a), ("B", b)):  # a folder not as written is compared, and says so
        if (why := note(run)) is not None:
            lines.append(f"{'warning' if run.integrity.status == ALTERED else 'note'}: {name}: {why}")
    lines += [""] if len(lines) > 3 else []
    failed = [f"{name} has {n:,} failed requests" for name, n in (("A", _errors(a)), ("B", _errors(b))) if n]
    if failed:
        lines += [f"note: {'; '.join(failed)}: compared on the items both answered", ""]
    lines.append("| items | metric | n | A | B | A − B | 95% CI | p (paired bootstrap) | p (Williams) |")
    lines.append("|---|---|---:|---:|---:|---:|---|---:|---:|")
    notes: dict[str, str] = {}  # "A, all (fallback included)" -> why its correlations could mislead
    for scope, valid_only in (("all (fallback included)", False), ("valid in both", True)):
        ua, ub = _usable(a, valid_only), _usable(b, valid_only)
        ids = sorted(ua.keys() & ub.keys(), key=id_order)
        groups = groups_of(a, [ua[i] for i in ids])
        # A side's correlation that could mislead (a near-constant answer, an undefined one) is marked † in its
        # cell and its reason said under the table, as in the run's own line and the report; small n is left
        # out here: the CI beside it already says how little n items tell.
        mark = {}
        for name, u in (("A", ua), ("B", ub)):
            why = _note([u[i] for i in ids])
            mark[name] = " †" if why else ""
            if why:
                notes[f"{name}, {scope}"] = why
        for metric in ("spearman", "pearson"):
            r = compare_paired(
                [float(ua[i].prediction) for i in ids],  # type: ignore[arg-type]
                [float(ub[i].prediction) for i in ids],  # type: ignore[arg-type]
                [float(ua[i].label) for i in ids],  # type: ignore[arg-type]
                groups,
                metric,
                n_resamples,
                seed,
            )
            p_boot = "–" if r.p_bootstrap is None else f"{r.p_bootstrap:.4f}"
            if r.p_bootstrap is not None and r.p_bootstrap <= 2 / (n_resamples + 1):
                p_boot = f"≤ {p_boot}"  # no resample crossed 0: the bootstrap can say no more than this
            p_w = "–" if r.p_williams is None else f"{r.p_williams:.4g}"
            lines.append(
                f"| {scope} | {metric} | {r.n} | {_f(r.a)}{mark['A']} | {_f(r.b)}{mark['B']} | {_f(r.diff)} "
                f"| [{_f(r.low)}, {_f(r.high)}] "
                f"| {p_boot} | {p_w} |"
            )
    unit = "sentence pairs (both conditions together)" if run_description(a.config).conditions else "items"
    lines += ([""] + [f"† {where}: {why}" for where, why in notes.items()]) if notes else []
    lines += [
        "",
        f"Paired bootstrap: {n_resamples} resamples of {unit}, both runs scored on each resample. "
        "Williams' t (Steiger 1980) treats items as independent.",
    ]
    return "\n".join(lines) + "\n"


def _note(scored: list[Scored]) -> str | None:
    """Why correlations over these samples could mislead (metrics.py correlation_note), small n left out."""
    pred = np.array([float(s.prediction) for s in scored])  # type: ignore[arg-type]
    gold = np.array([float(s.label) for s in scored])  # type: ignore[arg-type]
    why = correlation_note(pred, gold, np.array([s.valid for s in scored]))
    kept = [part for part in (why or "").split("; ") if part and not part.startswith("n=")]
    return "; ".join(kept) or None


def _invalid(run: Run) -> str:
    """ ", invalid 12.5% (25 of 200 replies scored by the fallback draw)" over the run's answered items."""
    answered = [s for s in run.samples if s.error is None and s.prediction is not None]
    bad = sum(not s.valid for s in answered)
    if not answered:
        return ""
    return f", invalid {100 * bad / len(answered):.1f}% ({bad} of {len(answered)} replies scored by the fallback draw)"


def _errors(run: Run) -> int:
    return sum(s.error is not None for s in run.samples)
