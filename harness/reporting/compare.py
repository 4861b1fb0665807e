"""Two runs on the same items, compared: paired cluster bootstrap and Williams' test (Steiger 1980), on the parsed
scores and, where both runs have them, the expected scores; each side named by the settings its run recorded
differently, with its invalid rate and reply reasons (issue 42: a chat and a raw run looked alike, an all-echo run
showed 0 % invalid and nothing else)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from harness.config.keys import recorded
from harness.config.option import KEYED, name_of
from harness.datasets.choose import run_description
from harness.reporting.integrity import note
from harness.reporting.report import groups_of, id_order
from harness.reporting.rowkeys import show
from harness.results.manifest import ALTERED
from harness.results.read import Run, load_run, setting
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


def _with_expected(run: Run) -> dict[str, Scored]:
    """The answered, labelled samples that have an expected score (--scoring expected: where the reply's first
    token had log-probabilities for the score tokens)."""
    return {s.id: s for s in run.samples if s.error is None and s.expected is not None and s.label is not None}


def _f(v: float | None) -> str:
    return "–" if v is None else f"{v:.2f}"


# The scopes of the table: name, the samples of a run it compares, and the score it compares (the prediction: the
# paper's rule's number or its fallback draw; the expected score: a protocol of its own, harness/scoring/expected.py)
_SCOPES: tuple[tuple[str, Callable[[Run], dict[str, Scored]], Callable[[Scored], float | None]], ...] = (
    ("all (fallback included)", lambda r: _usable(r, False), lambda s: s.prediction),
    ("valid in both", lambda r: _usable(r, True), lambda s: s.prediction),
    ("expected score", _with_expected, lambda s: s.expected),
)


def compare_runs(a_dir: Path, b_dir: Path, n_resamples: int = 2000, seed: int = 0) -> str:
    """A paired comparison of two runs on the same items, as text that names both run folders."""
    a, b = load_run(a_dir), load_run(b_dir)
    same_items(a, b)
    tags = told_apart(a.config, b.config)
    lines = [
        f"A: {a.run_dir} ({' · '.join([str(a.config['model']), *tags[0]])}){_invalid(a)}{_reasons(a)}",
        f"B: {b.run_dir} ({' · '.join([str(b.config['model']), *tags[1]])}){_invalid(b)}{_reasons(b)}",
        "",
    ]
    for name, run in (("A", a), ("B", b)):  # a folder not as written is compared, and says so
        if (why := note(run)) is not None:
            lines.append(f"{'warning' if run.integrity.status == ALTERED else 'note'}: {name}: {why}")
        if (why := _dominant(run)) is not None:
            lines.append(f"warning: {name}: {why}")
    lines += [""] if len(lines) > 3 else []
    failed = [f"{name} has {n:,} failed requests" for name, n in (("A", _errors(a)), ("B", _errors(b))) if n]
    if failed:
        lines += [f"note: {'; '.join(failed)}: compared on the items both answered", ""]
    expected = [name for name, run in (("A", a), ("B", b)) if _with_expected(run)]
    if len(expected) == 1:
        lines += [f"note: only {expected[0]} has expected scores (--scoring expected): they are not compared", ""]
    lines.append("| items | metric | n | A | B | A − B | 95% CI | p (paired bootstrap) | p (Williams) |")
    lines.append("|---|---|---:|---:|---:|---:|---|---:|---:|")
    notes: dict[str, str] = {}  # "A, all (fallback included)" -> why its correlations could mislead
    for scope, usable, score in _SCOPES:
        if scope == "expected score" and len(expected) < 2:
            continue
        ua, ub = usable(a), usable(b)
        ids = sorted(ua.keys() & ub.keys(), key=id_order)
        groups = groups_of(a, [ua[i] for i in ids])
        # A side's correlation that could mislead (a near-constant answer, an undefined one) is marked † in its
        # cell and its reason said under the table, as in the run's own line and the report; small n is left
        # out here: the CI beside it already says how little n items tell.
        mark = {}
        for name, u in (("A", ua), ("B", ub)):
            why = _note([u[i] for i in ids], score, parsed=scope != "expected score")
            mark[name] = " †" if why else ""
            if why:
                notes[f"{name}, {scope}"] = why
        for metric in ("spearman", "pearson"):
            r = compare_paired(
                [float(score(ua[i])) for i in ids],  # type: ignore[arg-type]
                [float(score(ub[i])) for i in ids],  # type: ignore[arg-type]
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
        "Williams' t (Steiger 1980) treats items as independent."
        + (
            " Expected score: the probability-weighted score of the reply's first token (not the paper's rule), "
            "on the items where both runs have one."
            if len(expected) == 2
            else ""
        ),
    ]
    return "\n".join(lines) + "\n"


def _note(scored: list[Scored], score: Callable[[Scored], float | None], parsed: bool = True) -> str | None:
    """Why correlations over these samples could mislead (metrics.py correlation_note), small n left out.
    `parsed`: the scores are the parsed ones (a constant one is "parsed as"), not expected scores."""
    pred = np.array([float(score(s)) for s in scored])  # type: ignore[arg-type]
    gold = np.array([float(s.label) for s in scored])  # type: ignore[arg-type]
    why = correlation_note(pred, gold, np.array([s.valid for s in scored]) if parsed else None)
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


def _answered(run: Run) -> list[dict[str, Any]]:
    return [e for s, e in zip(run.samples, run.extras, strict=True) if s.error is None and s.prediction is not None]


def _reasons(run: Run) -> str:
    """ "; reasons: echo 200" -- what each answered reply was (parsing.py reason_code), most first: an invalid
    rate of 0 % is also that of a model that repeated the scale every time (issue 42, Gemma-3-270M)."""
    counts = Counter(str(e["reason"]) for e in _answered(run) if e.get("reason") is not None)
    return "; reasons: " + ", ".join(f"{k} {v}" for k, v in counts.most_common()) if counts else ""


def _dominant(run: Run) -> str | None:
    """A warning where most answered replies have a reason other than `number`: the scores are then mostly not
    numbers the model gave as its answer (an echoed scale, text without a number, a reply cut off)."""
    answered = _answered(run)
    counts = Counter(str(e["reason"]) for e in answered if e.get("reason") is not None)
    if not counts:
        return None
    reason, n = counts.most_common(1)[0]
    if reason == "number" or 2 * n <= len(answered):
        return None
    return (
        f"{n} of {len(answered)} replies ({100 * n / len(answered):.0f}%) are `{reason}`, not a number given as the "
        f"answer ({_MEANING.get(reason, 'see docs/parsing.md')}): its scores say little of what the model judged"
    )


# What a reason code means, for the warning (harness/scoring/parsing.py reason_code; docs/parsing.md)
_MEANING = {
    "echo": "the number read is the prompt's own, the scale or a sentence's label, repeated",
    "no-number": "scored by the fallback draw",
    "out-of-range": "a number outside the label scale",
    "refusal": "the model declined, scored by the fallback draw",
    "cut-off": "the token budget ran out before a number",
    "thinking-cut-off": "the budget ran out while the model was thinking",
}


def told_apart(a: dict[str, Any], b: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The settings two runs' config.json record differently, as tags for each side (`chat` / `raw`, `shots=2`,
    `scoring=expected`): every setting whose declaration marks it as changing a key (option.py KEYED), read from the
    recorded `settings` (an older record: the declared default); the model is named beside them already. A
    setting recorded as None (the harness chose) is shown as what the run did, where the record says it (chat:
    the layout the backend used, results/read.py `setting`)."""
    ra, rb = (recorded(c["settings"] if isinstance(c.get("settings"), dict) else {}, KEYED) for c in (a, b))
    tags: tuple[list[str], list[str]] = ([], [])
    for d in ra:
        name = name_of(d)
        if name == "model" or _plain(ra[d]) == _plain(rb[d]):
            continue
        for side, (config, value) in enumerate(((a, ra[d]), (b, rb[d]))):
            if value is None:
                value = setting(config, name)
            tags[side].append(_tag(name, value))
    return tags


def _tag(name: str, value: Any) -> str:
    """A setting as a side's tag: chat / raw, shots=2, api.base_urls=["http://127.0.0.1:18093/v1"]; whole where
    the report's row labels cut it at 24 characters (two ports differ only at the end), up to 120."""
    if name in ("chat", "reasoning") or value is None:
        return show(name, value)
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return f"{name}={text if len(text) <= 120 else text[:117] + '...'}"


def _plain(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)
