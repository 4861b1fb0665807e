"""Reports from run folders, no model calls: Table 11/12 layout, C-STS beside STS-B, published numbers, CIs."""

from __future__ import annotations

import functools
import importlib
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, cast

import numpy as np
import pandas as pd

from harness.datasets.choose import run_description
from harness.reporting.integrity import flag, load_readable, note
from harness.reporting.paper_settings import matched, run_settings
from harness.reporting.part import Built, Part
from harness.reporting.published import Published, load_published, match, not_comparable
from harness.reporting.rowkeys import label_rows, text
from harness.reporting.sections import SECTIONS
from harness.reporting.shareable import without_csts_text
from harness.reporting.significance import flag_differences
from harness.reporting.tables import LAYOUT_METRICS
from harness.results.manifest import ALTERED
from harness.results.provenance import endpoints
from harness.results.read import REASONS, Run, expand, load_run
from harness.results.shards import merge_shards
from harness.results.stage import staged
from harness.scoring.metrics import METRICS, compute_metrics, pearson, spearman
from harness.scoring.parsing import fallback_score
from harness.scoring.stats import Interval, bootstrap_ci, fallback_spread
from harness.types import HarnessError, Scored
from harness.variants import VARIANTS

N_BOOTSTRAP = 1000
FALLBACK_SEEDS = 20


def groups_of(run: Run, samples: Sequence[Scored]) -> list[str] | None:
    """Bootstrap clusters: a dataset with conditions (C-STS) resamples sentence pairs (both conditions together);
    one without (STS-B) items on their own."""
    if not run_description(run.config).conditions:
        return None
    # Runs written before samples carried `pair`: the release lists both conditions of a pair as rows 2i, 2i+1.
    return [s.pair if s.pair is not None else str(int(s.id) // 2) for s in samples]


def _fallback_draws(run: Run, invalid: Sequence[Scored], seeds: int) -> np.ndarray:
    """The fallback draws the runner would have made for the invalid items under seeds 0..seeds-1 (cached: the
    cells of a sweep share query ids)."""
    return np.array([[fallback_score(seed, s.id, run.label_range) for s in invalid] for seed in range(seeds)])


def summarize(run: Run, n_bootstrap: int = N_BOOTSTRAP, fallback_seeds: int = FALLBACK_SEEDS) -> dict[str, Any]:
    """One report row: the run's metrics recomputed from samples.jsonl, CIs, notes and the fallback spread."""
    c = run.config
    strict = run.identity()["parse"] == "strict"
    m = compute_metrics(run.samples, run.label_range, on_label_scale=_on_label_scale(run), strict=strict)
    row: dict[str, Any] = {
        "dataset": c["dataset"],
        "split": run.split,
        "variant": run.variant,
        "labels": run.labels,
        "model": c["model"],
        "instr": run.instr,
        "shots": c["shots"],
        **{k: text(k, v) for k, v in run.identity().items()},
        "dry_run": run.dry_run,
        "n": m["n"],
        "errors": m["errors"],
        "invalid_pct": m["invalid_pct"],
        "out_of_range_pct": m["out_of_range_pct"],
        "pearson": m.get("pearson"),
        "spearman": m.get("spearman"),
        "n_valid": m.get("n_valid"),
        "pearson_valid": m.get("pearson_valid"),
        "spearman_valid": m.get("spearman_valid"),
    }
    for name in METRICS:  # scoring/metrics.py's table: the "More metrics" section shows them
        row[name], row[f"{name}_note"] = m.get(name), m.get(f"{name}_note")
    reasons = Counter(e["reason"] for e in run.extras if e["reason"] is not None)
    row |= {f"reason_{code.replace('-', '_')}": reasons.get(code, 0) for code in REASONS}
    row["reasons_other"] = ", ".join(f"{k}: {v}" for k, v in sorted(reasons.items()) if k not in REASONS)
    # A reasoning run's thinking: reasoning tokens billed (where the provider counts them) and thoughts kept.
    row["reasoning_tokens"] = sum((e.get("usage") or {}).get("reasoning_tokens", 0) for e in run.extras)
    row["thoughts"] = sum(1 for s in run.samples if s.reasoning)
    served = sorted({str(e["served_model"]) for e in run.extras if e.get("served_model")})
    row["served_model"] = ", ".join(served) if served else None
    scored = [s for s in run.samples if s.error is None and s.prediction is not None and s.label is not None]
    pred = [float(s.prediction) for s in scored]  # type: ignore[arg-type]
    gold = [float(s.label) for s in scored]  # type: ignore[arg-type]
    hidden = m["n"] > 0 and all(s.label is None for s in run.samples)  # the C-STS test split hides its labels
    for name in ("spearman", "pearson"):
        derived = m.get(f"{name}_note") or ("labels hidden" if hidden else None)
        row[f"{name}_note"] = run.stored_metrics.get(f"{name}_note") or derived
    if strict:  # --parse strict: a second, separately named metric set, never in place of the paper's
        for key in ("invalid_strict_pct", "spearman_strict", "pearson_strict", "spearman_strict_note"):
            row[key] = m.get(key)
    if scored:
        groups = groups_of(run, scored)
        ci = _bootstrap_ci(tuple(pred), tuple(gold), None if groups is None else tuple(groups), n_bootstrap)
        for name in ("spearman", "pearson"):
            row[f"{name}_lo"], row[f"{name}_hi"] = ci[name].low, ci[name].high
        invalid = [not s.valid for s in scored]
        if any(invalid):
            draws = _fallback_draws(run, [s for s in scored if not s.valid], fallback_seeds)
            spread = fallback_spread(pred, gold, invalid, draws)
            for name in ("spearman", "pearson"):
                row[f"{name}_fallback_mean"], row[f"{name}_fallback_sd"] = spread[name]
    row["mismatch"] = "" if run.dry_run else _mismatch(m, run.stored_metrics)
    row["integrity"], row["integrity_note"] = run.integrity.status, note(run)
    row["run"] = run.run_dir.name
    row["run_dir"] = str(run.run_dir)
    return row


def _on_label_scale(run: Run) -> bool:
    """Whether the run's predictions are on the label scale (not an embedding variant's cosines)."""
    name = run.config.get("variant") or "sentences"
    return name not in VARIANTS or not VARIANTS[name].embeds  # a variant unknown here: taken as on the scale


@functools.lru_cache(maxsize=64)
def _bootstrap_ci(
    pred: tuple[float, ...], gold: tuple[float, ...], groups: tuple[str, ...] | None, n_bootstrap: int
) -> dict[str, Interval]:
    """bootstrap_ci, kept for runs that score the same items alike (a baseline that ignores instruction and shots
    in every cell of a sweep, one run listed twice): its resamples are most of a report's time."""
    return bootstrap_ci(pred, gold, groups, n_bootstrap, seed=0)


def _mismatch(recomputed: dict[str, Any], stored: dict[str, Any]) -> str:
    """Names of metrics.json values that samples.jsonl does not reproduce (should be empty)."""
    bad = []
    for key in ("n", "invalid_pct", "spearman", "pearson"):
        a, b = recomputed.get(key), stored.get(key)
        if a is None or b is None:
            if (a is None) != (b is None) and stored:
                bad.append(key)
        elif not math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-9):
            bad.append(key)
    return ",".join(bad)


def common_items(runs: Sequence[Run], table: pd.DataFrame) -> pd.DataFrame:
    """Spearman/Pearson on the items every run of the same dataset, split and labels parsed (valid in all)."""
    table = table.copy()
    for col in ("n_common", "spearman_common", "pearson_common"):
        table[col] = None
    keys = ["dataset", "split", "variant", "labels"]
    for _, idx in table.groupby(keys, sort=False).groups.items():
        parsed = {
            i: {s.id: s for s in runs[i].samples if s.valid and s.error is None and s.label is not None} for i in idx
        }
        # A run that parsed nothing (the random baseline) would empty the intersection for all: left out of it.
        parsed = {i: u for i, u in parsed.items() if u}
        if len(parsed) < 2:
            continue
        ids = sorted(set.intersection(*(set(u) for u in parsed.values())), key=id_order)
        for i, u in parsed.items():
            pred, gold = [u[k].prediction for k in ids], [u[k].label for k in ids]
            table.loc[i, "n_common"] = len(ids)
            table.loc[i, "spearman_common"] = spearman(pred, gold) if ids else None  # type: ignore[arg-type]
            table.loc[i, "pearson_common"] = pearson(pred, gold) if ids else None  # type: ignore[arg-type]
    return table


def id_order(i: str) -> tuple[int, str]:
    return (int(i), i) if i.isdigit() else (1 << 62, i)


def attach_published(
    table: pd.DataFrame,
    published: list[Published],
    identities: Sequence[dict[str, Any]],
    why: Sequence[Sequence[str]] | None = None,
) -> pd.DataFrame:
    """Add the matching published row's numbers, whether the run may be compared with them, and the differences
    (only where it may: the whole published split, no failed requests, the paper's protocol; `why`: per run, more
    reasons it may not, such as another endpoint than the provider's API or an altered folder)."""
    why = why or [()] * len(table)
    table = table.copy()
    found = [
        match(published, r.model, r.dataset, r.split, r.instr, int(r.shots), r.variant, r.labels)
        for r in table.itertuples()
    ]
    table["paper_source"] = [p.source if p else None for p in found]
    table["paper_model"] = [p.model if p else None for p in found]
    notes = [
        not_comparable(p, int(r.n), int(r.errors), ident, bool(r.dry_run), more) if p else None
        for p, r, ident, more in zip(found, table.itertuples(), identities, why, strict=True)
    ]
    table["paper_note"] = notes
    table["paper_match"] = [  # a comparable run says what it shares with the paper
        matched(p.source, p.model, p.instr, p.shots, p.variant) if p and note is None else None
        for p, note in zip(found, notes, strict=True)
    ]
    for key, _ in LAYOUT_METRICS:
        paper = [getattr(p, key) if p else None for p in found]
        table[f"paper_{key}"] = paper
        table[f"diff_{key}"] = [
            ours - theirs if theirs is not None and ours is not None and not _nan(ours) and note is None else None
            for ours, theirs, note in zip(table[key], paper, notes, strict=True)
        ]
    return flag_differences(table)  # each Δ's p, adjusted over every comparable cell of the report


def _nan(v: object) -> bool:
    return isinstance(v, float) and math.isnan(v)


def build_table(
    run_dirs: Sequence[Path] | Sequence[Run],
    published: list[Published] | None = None,
    notes: Sequence[str] = (),
    **kw: Any,
) -> pd.DataFrame:
    """One row per run folder with every number a report shows, each with its ref (R1, R2, ...) and the row
    label that keeps it in a cell of its own (flagged when the folder is not as written: reporting/integrity.py).
    `notes`: more for the report's list (the copies left out)."""
    runs = [r if isinstance(r, Run) else load_run(r) for r in run_dirs]
    if not runs:
        raise HarnessError("no run folders to report on")
    table = pd.DataFrame([summarize(r, **kw) for r in runs])
    table.insert(0, "ref", [f"R{i + 1}" for i in range(len(table))])
    labels, same = label_rows(table, runs)
    table["row"] = [label + flag(run) for label, run in zip(labels, runs, strict=True)]
    table.attrs["notes"] = [*same, *notes]
    table = common_items(runs, table)
    identities = [run_settings(r, served) for r, served in zip(runs, table["served_model"], strict=True)]
    why = [_not_as_published(r) for r in runs]
    return attach_published(table, load_published() if published is None else published, identities, why)


def _not_as_published(run: Run) -> list[str]:
    """Reasons beyond the protocol that a run's numbers are not the published model's: another endpoint than the
    provider's API (a proxy or stand-in may answer for that name with another model), an altered folder."""
    urls = endpoints(run.config)
    why = [f"called {', '.join(urls)}, not the provider's API"] if urls else []
    return why + (["run folder altered after it was written"] if run.integrity.status == ALTERED else [])


def write_report(
    run_paths: Sequence[Path],
    out_dir: Path,
    published: list[Published] | None = None,
    loaded: Mapping[Path, Run] | None = None,
    shareable: bool = False,
    merge: bool = True,
) -> Path:
    """Stage every report file (md, csv, tex, png, html), then rename the folder into place (replacing an old one).
    `loaded`: runs of these folders already in memory (a sweep's report does not read back what it just wrote).
    `shareable`: C-STS prompts, replies and refusals left out (the release terms forbid sharing its text).
    `merge`: --shard parts merged into their whole run (off: each part its own row, as a sharded sweep's report)."""
    from harness.reporting.html import write_html
    from harness.reporting.markdown import render_report
    from harness.reporting.plots import plot_invalid, plot_spearman_vs_k

    runs, notes = load_readable(expand(run_paths), loaded)  # unreadable folders skipped, copies shown once
    if merge:  # --shard parts checked and merged into their whole run
        runs, merged = merge_shards(runs)
        notes = [*notes, *merged]
    if shareable:
        runs = [without_csts_text(run) for run in runs]
    table = build_table(runs, published, notes)
    with staged(out_dir) as staging:  # an old report folder there is replaced only once the new one is whole
        plots = plot_spearman_vs_k(table, staging / "spearman_vs_k.png")
        plots += plot_invalid(table, staging / "invalid_rate.png")
        sections = build_sections(table, runs)  # reporting/sections.py: one line per section
        render_report(table, staging, plots, sections)
        write_html(table, runs, plots, staging / "index.html", sections)
    return out_dir


class _Builder(Protocol):
    """What each module named in SECTIONS offers."""

    def section(self, table: pd.DataFrame, runs: Sequence[Run]) -> Part | None: ...


def build_sections(table: pd.DataFrame, runs: Sequence[Run]) -> list[Built]:
    """Every section of SECTIONS that has something to show for these runs, in the table's order."""
    out = []
    for key, s in SECTIONS.items():
        part = cast(_Builder, importlib.import_module(s.module)).section(table, runs)
        if part is not None:
            out.append(Built(key, s.title, part))
    return out
