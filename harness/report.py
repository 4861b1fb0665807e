"""Reports from run folders, no model calls: Table 11/12 layout, C-STS beside STS-B, published numbers, CIs."""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.metrics import compute_metrics, pearson, spearman
from harness.parsing import fallback_score
from harness.published import SUBSET_SPLITS, TEMPLATE_INSTR, Published, load_published, match
from harness.results import read_samples
from harness.stats import bootstrap_ci, fallback_spread
from harness.tables import LAYOUT_METRICS
from harness.types import HarnessError, Scored

N_BOOTSTRAP = 1000
FALLBACK_SEEDS = 20
_SCORED_FIELDS = {f.name for f in dataclasses.fields(Scored)}


@dataclass(frozen=True)
class Run:
    """A finished run folder, read back: its config and its samples as the runner scored them."""

    run_dir: Path
    config: dict[str, Any]
    samples: tuple[Scored, ...]
    stored_metrics: dict[str, Any]

    @property
    def label_range(self) -> tuple[float, float]:
        lo, hi = self.config["label_range"]
        return float(lo), float(hi)

    @property
    def instr(self) -> str:
        """The instruction level: the template's name (none/short/long, or a custom template's stem), with the
        paper layouts that carry an instruction level named by it (t5-long -> long, Tu et al.'s -> short)."""
        stem = Path(self.config["template"]).stem
        return TEMPLATE_INSTR.get(stem, stem)

    @property
    def split(self) -> str:
        """The evaluated split, named as in paper_results.csv where a subset of it was scored."""
        return SUBSET_SPLITS.get(self.config.get("subset") or "all", self.config["split"])

    @property
    def variant(self) -> str:
        variant = self.config.get("variant") or "sentences"
        return "qa-answers" if variant == "qa" else variant  # paper_results.csv's name for Tu et al.'s QA prompt

    @property
    def labels(self) -> str:
        return self.config.get("labels") or "original"


def _scored(record: dict[str, Any]) -> Scored:
    fields = {k: v for k, v in record.items() if k in _SCORED_FIELDS}
    fields["shot_ids"] = tuple(fields.get("shot_ids") or ())
    return Scored(**fields)


def load_run(run_dir: Path) -> Run:
    """Read config.json, samples.jsonl and metrics.json of one run folder."""
    try:
        config = json.loads((run_dir / "config.json").read_text(encoding="utf-8"))
        samples = tuple(_scored(r) for r in read_samples(run_dir))
        metrics_path = run_dir / "metrics.json"
        stored = json.loads(metrics_path.read_text(encoding="utf-8")) if metrics_path.exists() else {}
    except (OSError, ValueError, TypeError) as e:
        raise HarnessError(f"{run_dir} is not a readable run folder: {e}") from None
    return Run(run_dir, config, samples, stored)


def expand(paths: Sequence[Path]) -> list[Path]:
    """Run folders from run and sweep folders, in order, each once."""
    from harness.sweep import sweep_run_dirs

    out: list[Path] = []
    for p in paths:
        if (p / "sweep.json").is_file():
            out += sweep_run_dirs(p)
        elif (p / "config.json").is_file():
            out.append(p)
        else:
            raise HarnessError(f"{p} is neither a run folder (config.json) nor a sweep folder (sweep.json)")
    return list(dict.fromkeys(out))


def _groups(run: Run, samples: Sequence[Scored]) -> list[str] | None:
    """Bootstrap clusters: C-STS sentence pairs (both conditions together); STS-B items on their own."""
    if run.config["dataset"] != "csts":
        return None
    # Runs written before samples carried `pair`: the release lists both conditions of a pair as rows 2i, 2i+1.
    return [s.pair if s.pair is not None else str(int(s.id) // 2) for s in samples]


# Cells of a sweep share query ids, so one report asks for the same draw many times (a hash and a Random each).
_draw = functools.lru_cache(maxsize=1 << 18)(fallback_score)


def _fallback_draws(run: Run, invalid: Sequence[Scored], seeds: int) -> np.ndarray:
    """The fallback draws the runner would have made for the invalid items under seeds 0..seeds-1."""
    return np.array([[_draw(seed, s.id, run.label_range) for s in invalid] for seed in range(seeds)])


def summarize(run: Run, n_bootstrap: int = N_BOOTSTRAP, fallback_seeds: int = FALLBACK_SEEDS) -> dict[str, Any]:
    """One report row: the run's metrics recomputed from samples.jsonl, CIs and the fallback spread."""
    c = run.config
    m = compute_metrics(run.samples, run.label_range)
    row: dict[str, Any] = {
        "dataset": c["dataset"],
        "split": run.split,
        "variant": run.variant,
        "labels": run.labels,
        "model": c["model"],
        "instr": run.instr,
        "shots": c["shots"],
        "seed": c["seed"],
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
    scored = [s for s in run.samples if s.error is None and s.prediction is not None and s.label is not None]
    if scored:
        pred = [float(s.prediction) for s in scored]  # type: ignore[arg-type]
        gold = [float(s.label) for s in scored]  # type: ignore[arg-type]
        ci = bootstrap_ci(pred, gold, _groups(run, scored), n_bootstrap, seed=0)
        for name in ("spearman", "pearson"):
            row[f"{name}_lo"], row[f"{name}_hi"] = ci[name].low, ci[name].high
        invalid = [not s.valid for s in scored]
        if any(invalid):
            draws = _fallback_draws(run, [s for s in scored if not s.valid], fallback_seeds)
            spread = fallback_spread(pred, gold, invalid, draws)
            for name in ("spearman", "pearson"):
                row[f"{name}_fallback_mean"], row[f"{name}_fallback_sd"] = spread[name]
    row["mismatch"] = _mismatch(m, run.stored_metrics)
    row["run"] = run.run_dir.name
    row["run_dir"] = str(run.run_dir)
    return row


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
        ids = sorted(set.intersection(*(set(u) for u in parsed.values())), key=_id_order)
        for i, u in parsed.items():
            pred, gold = [u[k].prediction for k in ids], [u[k].label for k in ids]
            table.loc[i, "n_common"] = len(ids)
            table.loc[i, "spearman_common"] = spearman(pred, gold) if ids else None  # type: ignore[arg-type]
            table.loc[i, "pearson_common"] = pearson(pred, gold) if ids else None  # type: ignore[arg-type]
    return table


def _id_order(i: str) -> tuple[int, str]:
    return (int(i), i) if i.isdigit() else (1 << 62, i)


def attach_published(table: pd.DataFrame, published: list[Published]) -> pd.DataFrame:
    """Add the matching published row's numbers and our − published differences."""
    table = table.copy()
    found = [
        match(published, r.model, r.dataset, r.split, r.instr, int(r.shots), r.variant, r.labels)
        for r in table.itertuples()
    ]
    table["paper_source"] = [p.source if p else None for p in found]
    table["paper_model"] = [p.model if p else None for p in found]
    for key, _ in LAYOUT_METRICS:
        table[f"paper_{key}"] = [getattr(p, key) if p else None for p in found]
        table[f"diff_{key}"] = [
            ours - theirs if ours is not None and theirs is not None and not _nan(ours) else None
            for ours, theirs in zip(table[key], table[f"paper_{key}"], strict=True)
        ]
    return table


def _nan(v: object) -> bool:
    return isinstance(v, float) and math.isnan(v)


def build_table(run_dirs: Sequence[Path], published: list[Published] | None = None, **kw: Any) -> pd.DataFrame:
    """One row per run folder with every number a report shows."""
    runs = [load_run(d) for d in run_dirs]
    if not runs:
        raise HarnessError("no run folders to report on")
    table = pd.DataFrame([summarize(r, **kw) for r in runs])
    table = common_items(runs, table)
    return attach_published(table, load_published() if published is None else published)


def write_report(run_paths: Sequence[Path], out_dir: Path, published: list[Published] | None = None) -> Path:
    """Stage every report file (md, csv, tex, png), then rename the folder into place (replacing an old report)."""
    from harness.plots import plot_invalid, plot_spearman_vs_k
    from harness.tables import render_report

    table = build_table(expand(run_paths), published)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        plots = plot_spearman_vs_k(table, staging / "spearman_vs_k.png")
        plots += plot_invalid(table, staging / "invalid_rate.png")
        render_report(table, staging, plots)
        if out_dir.exists():
            old = out_dir.with_name(f".{out_dir.name}.old")
            os.rename(out_dir, old)
            os.rename(staging, out_dir)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(staging, out_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out_dir


def compare_runs(a_dir: Path, b_dir: Path, n_resamples: int = 2000, seed: int = 0) -> str:
    """A paired comparison of two runs on the same items, as text that names both run folders."""
    from harness.stats import compare_paired

    a, b = load_run(a_dir), load_run(b_dir)
    for key in ("dataset", "split"):
        if a.config[key] != b.config[key]:
            raise HarnessError(f"runs differ in {key} ({a.config[key]} vs {b.config[key]}): not the same items")
    if a.labels != b.labels:
        raise HarnessError(f"runs are scored against different labels ({a.labels} vs {b.labels})")

    def usable(run: Run, valid_only: bool) -> dict[str, Scored]:
        return {
            s.id: s
            for s in run.samples
            if s.error is None and s.prediction is not None and s.label is not None and (s.valid or not valid_only)
        }

    lines = [f"A: {a.run_dir}", f"B: {b.run_dir}", ""]
    lines.append("| items | metric | n | A | B | A − B | 95% CI | p (paired bootstrap) | p (Williams) |")
    lines.append("|---|---|---:|---:|---:|---:|---|---:|---:|")
    for scope, valid_only in (("all (fallback included)", False), ("valid in both", True)):
        ua, ub = usable(a, valid_only), usable(b, valid_only)
        ids = sorted(ua.keys() & ub.keys(), key=_id_order)
        shared = [ua[i] for i in ids]
        groups = _groups(a, shared)
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
                f"| {scope} | {metric} | {r.n} | {_f(r.a)} | {_f(r.b)} | {_f(r.diff)} | [{_f(r.low)}, {_f(r.high)}] "
                f"| {p_boot} | {p_w} |"
            )
    unit = "sentence pairs (both conditions together)" if a.config["dataset"] == "csts" else "items"
    lines += [
        "",
        f"Paired bootstrap: {n_resamples} resamples of {unit}, both runs scored on each resample. "
        "Williams' t (Steiger 1980) treats items as independent.",
    ]
    return "\n".join(lines) + "\n"


def _f(v: float | None) -> str:
    return "–" if v is None else f"{v:.2f}"
