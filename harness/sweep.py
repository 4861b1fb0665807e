"""Grids in one command: every (dataset, model, instruction, k) cell its own run folder, finished cells reused."""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.config.settings import RunConfig
from harness.datasets.load import SPLITS
from harness.results.claims import claim
from harness.results.read import finished_runs
from harness.results.stage import staged
from harness.types import HarnessError

# The options that may hold comma lists, and the RunConfig field each sets.
GRID_OPTIONS = {"--dataset": "dataset", "--model": "model", "--instr": "instr", "--shots": "shots"}


@dataclass(frozen=True)
class Cell:
    """One setting of a sweep and where its results are."""

    config: RunConfig
    config_hash: str
    run_dir: Path
    reused: bool
    errors: int = 0  # requests that failed for good (a reused cell has none)

    @property
    def label(self) -> str:
        c = self.config
        return f"{c.dataset} {c.model} {c.instr} k={c.shots}"


@dataclass(frozen=True)
class SweepResult:
    sweep_dir: Path
    cells: tuple[Cell, ...]

    @property
    def failed(self) -> tuple[Cell, ...]:
        """Cells with failed requests: the sweep exits 3, like a single run, and a rerun retries them."""
        return tuple(c for c in self.cells if c.errors)


def split_grid(argv: Sequence[str]) -> tuple[list[str], dict[str, list[str]]]:
    """Pull comma lists out of argv: (argv with each list's first value, {field: values}); no lists -> {}."""
    out, grid = list(argv), {}
    i = 0
    while i < len(out):
        opt, eq, value = out[i].partition("=")
        if opt in GRID_OPTIONS and (eq or i + 1 < len(out)):
            j = i if eq else i + 1
            value = value if eq else out[j]
            if "," in value:
                values = [v.strip() for v in value.split(",")]
                if any(not v for v in values):
                    raise HarnessError(f"{opt} {value!r}: empty item in the comma list")
                grid[GRID_OPTIONS[opt]] = list(dict.fromkeys(values))  # order kept, repeats dropped
                out[j] = f"{opt}={values[0]}" if eq else values[0]
            i = j
        i += 1
    return out, grid


def cells(base: RunConfig, grid: dict[str, list[str]]) -> list[RunConfig]:
    """Every combination of the grid's values over the base config, dataset-major (one data load after another)."""
    if base.run_id is not None:
        raise HarnessError("--run-id names one run; a sweep names each cell's run folder itself")
    axes: dict[str, list[Any]] = {name: [getattr(base, name)] for name in GRID_OPTIONS.values()}
    for name, values in grid.items():
        axes[name] = [_shots(v) for v in values] if name == "shots" else values
    for d in axes["dataset"]:
        if d not in SPLITS:
            raise HarnessError(f"unknown dataset {d!r} in --dataset; choose from {', '.join(SPLITS)}")
    combos = itertools.product(*(axes[name] for name in GRID_OPTIONS.values()))
    return [dataclasses.replace(base, **dict(zip(GRID_OPTIONS.values(), c, strict=True))) for c in combos]


def _shots(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise HarnessError(f"--shots: {value!r} is not an integer") from None


def run_sweep(base: RunConfig, grid: dict[str, list[str]], log: Callable[[str], None] = print) -> SweepResult:
    """Plan every cell first (bad settings fail before any model call), run the unfinished ones, then report."""
    from harness.reporting.report import write_report  # deferred: matplotlib only when a sweep finishes
    from harness.runner import plan, run

    configs = cells(base, grid)
    # Planning every cell up front catches a bad template, split or model before any request is sent.
    planned = [plan(c) for c in configs]
    hashes = [p.record["config_hash"] for p in planned]
    done = {} if base.dry_run else finished_runs(base.results_dir)
    if base.api.batch is not None and not base.dry_run:  # every unfinished cell's requests in one set of batches
        from harness.calling.batch.run import prefetch

        todo = [p for p, h in zip(planned, hashes, strict=True) if h not in done and p.prep.requests]
        prefetch([(p.backend, p.prep.requests, p.price) for p in todo if p.backend is not None], base)
    results = []
    for i, (config, config_hash) in enumerate(zip(configs, hashes, strict=True), start=1):
        label = f"[{i}/{len(configs)}] {Cell(config, config_hash, Path(), False).label}"
        if config_hash in done:
            log(f"{label}: reused {done[config_hash]}")
            results.append(Cell(config, config_hash, done[config_hash], True))
            continue
        result = run(config)
        done[config_hash] = result.run_dir
        log(f"{label}: {_summary(result.metrics)} -> {result.run_dir}")
        results.append(Cell(config, config_hash, result.run_dir, False, int(result.metrics.get("errors") or 0)))
    sweep_dir = _write_sweep(base, grid, results, write_report)
    return SweepResult(sweep_dir, tuple(results))


def _summary(metrics: dict[str, Any]) -> str:
    if metrics.get("dry_run"):
        return f"dry run, {metrics['requests']} requests"
    parts = [f"invalid={metrics['invalid_pct']:.1f}%"] if metrics.get("invalid_pct") is not None else []
    for k in ("spearman", "pearson"):  # a correlation that could mislead carries its note, as on the run's line
        value, note = metrics.get(k), metrics.get(f"{k}_note")
        if value is not None or note:
            parts.append(f"{k}={'None' if value is None else f'{value:.2f}'}" + (f" ({note})" if note else ""))
    return " ".join(parts) or "no labels"


def _write_sweep(
    base: RunConfig, grid: dict[str, list[str]], results: list[Cell], write_report: Callable[..., Any]
) -> Path:
    """Stage sweep.json and the report, then rename the folder into place."""
    results_dir = base.results_dir
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    claimed = claim(results_dir, f"sweep-{stamp}", explicit=False)
    with staged(claimed) as staging:
        record = {
            "created": stamp,
            "grid": {name: grid.get(name, [getattr(base, name)]) for name in GRID_OPTIONS.values()},
            "split": base.split,
            "seed": base.seed,
            "limit": base.limit,
            # Run folders are named relative to this folder's parent, so a moved results/ keeps working.
            "cells": [
                {
                    "dataset": c.config.dataset,
                    "model": c.config.model,
                    "instr": c.config.instr,
                    "shots": c.config.shots,
                    "config_hash": c.config_hash,
                    "run_dir": os.path.relpath(c.run_dir, results_dir),
                    "reused": c.reused,
                }
                for c in results
            ],
        }
        (staging / "sweep.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        if not base.dry_run:
            write_report([c.run_dir for c in results], staging / "report")
    return claimed.final

