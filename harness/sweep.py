"""Grids in one command: every (dataset, model, instruction, k) cell its own run folder, finished cells reused."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import itertools
import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.calling.estimate import dry_run_cost
from harness.config.settings import RunConfig
from harness.datasets.choose import describe_dataset
from harness.results.claims import claim
from harness.results.read import Run, finished_runs, written_run
from harness.results.stage import staged
from harness.scoring.metrics import metrics_line
from harness.types import HarnessError

# The RunConfig fields a sweep varies: the options --dataset, --model, --instr and --shots take comma lists
# (argparse splits them: harness/cli/configs.py CommaList). Order: dataset-major (one data load after another).
GRID_FIELDS = ("dataset", "model", "instr", "shots")


@dataclass(frozen=True)
class Cell:
    """One setting of a sweep and where its results are."""

    config: RunConfig
    config_hash: str
    run_dir: Path
    reused: bool
    errors: int = 0  # requests that failed for good (a reused cell has none)
    estimate: Mapping[str, Any] | None = field(default=None, compare=False)  # a dry run's tokens and cost

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


def cells(base: RunConfig, grid: Mapping[str, Sequence[Any]]) -> list[RunConfig]:
    """Every combination of the grid's values over the base config, dataset-major (one data load after another)."""
    if base.run_id is not None:
        raise HarnessError("--run-id names one run; a sweep names each cell's run folder itself")
    axes = [list(grid.get(name, [getattr(base, name)])) for name in GRID_FIELDS]
    return [dataclasses.replace(base, **dict(zip(GRID_FIELDS, c, strict=True))) for c in itertools.product(*axes)]


def run_sweep(base: RunConfig, grid: Mapping[str, Sequence[Any]], log: Callable[[str], None] = print) -> SweepResult:
    """Plan every cell once, first (bad settings fail before any model call), run the unfinished ones with their
    plans, then report."""
    configs = cells(base, grid)
    with _fewer_full_collections():
        return _run_sweep(base, grid, configs, log)


def _run_sweep(
    base: RunConfig, grid: Mapping[str, Sequence[Any]], configs: list[RunConfig], log: Callable[[str], None]
) -> SweepResult:
    from harness.runner import Shared, plan

    # Planning every cell up front catches a bad template, split or model before any request is sent. The
    # cells share their data (decrypted and parsed once), shot draws, templates and provenance.
    shared = Shared()
    for dataset in dict.fromkeys(c.dataset for c in configs):  # every --dataset value known before any is loaded
        describe_dataset(dataset)
    planned = [plan(c, shared) for c in configs]
    hashes = [p.record["config_hash"] for p in planned]
    done = {} if base.dry_run else finished_runs(base.results_dir)
    if base.api.batch is not None and not base.dry_run:  # every unfinished cell's requests in one set of batches
        from harness.calling.batch.run import prefetch

        todo = [p for p, h in zip(planned, hashes, strict=True) if h not in done and p.prep.requests]
        prefetch([(p.backend, p.prep.requests, p.price) for p in todo if p.backend is not None], base)
    results: list[Cell] = []
    written: dict[Path, Run] = {}  # the runs made here, as the report would read them back from their folders
    try:
        _run_cells(base, configs, planned, hashes, done, results, written, log)
    except KeyboardInterrupt as e:  # Ctrl-C or SIGTERM: the cells run so far are kept, and reused by a rerun
        raise SweepInterrupted(e, tuple(c for c in results if not base.dry_run)) from e
    sweep_dir = _write_sweep(base, grid, results, written)
    return SweepResult(sweep_dir, tuple(results))


class SweepInterrupted(KeyboardInterrupt):
    """A sweep stopped by a signal (`signal`: the KeyboardInterrupt it raised): its finished cells' folders stay,
    and the same command reuses them; the cell that was running wrote nothing, and no sweep folder was written."""

    def __init__(self, signal: KeyboardInterrupt, kept: tuple[Cell, ...]) -> None:
        super().__init__()
        self.signal, self.kept = signal, kept


def _run_cells(
    base: RunConfig,
    configs: list[RunConfig],
    planned: list[Any],
    hashes: list[str],
    done: dict[str, Path],
    results: list[Cell],
    written: dict[Path, Run],
    log: Callable[[str], None],
) -> None:
    """Each cell in turn: reused where a finished run has its settings, else run with its plan (`results` and
    `written` grow as cells finish, so an interrupted sweep knows what it kept)."""
    from harness.runner import run

    for i, (config, planned_cell, config_hash) in enumerate(zip(configs, planned, hashes, strict=True), start=1):
        label = f"[{i}/{len(configs)}] {Cell(config, config_hash, Path(), False).label}"
        if config_hash in done:
            log(f"{label}: reused {done[config_hash]}")
            results.append(Cell(config, config_hash, done[config_hash], True))
            continue
        result = run(config, planned_cell)
        done[config_hash] = result.run_dir
        if not base.dry_run:
            written[result.run_dir] = written_run(
                result.run_dir, result.config, result.records, result.metrics, result.samples
            )
        log(f"{label}: {_summary(result.metrics)}{_baseline_note(config.model)} -> {result.run_dir}")
        errors, estimate = int(result.metrics.get("errors") or 0), result.metrics if base.dry_run else None
        results.append(Cell(config, config_hash, result.run_dir, False, errors, estimate))


@contextlib.contextmanager
def _fewer_full_collections() -> Iterator[None]:
    """Young generations collected as usual, full garbage collections put off until the sweep ends: a sweep keeps
    every cell's prompts, samples and records until its report, and each full collection walks all of them (and
    everything imported) again, a tenth of a grid's CPU by default."""
    thresholds = gc.get_threshold()
    gc.set_threshold(thresholds[0], thresholds[1], max(thresholds[2], 1000))
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)


def _summary(metrics: dict[str, Any]) -> str:
    if metrics.get("dry_run"):  # what the cell would cost: the sweep's total follows its last cell
        return (
            f"dry run, {metrics['requests']} requests, {metrics['prompt_tokens']} prompt tokens, at most "
            f"{metrics['max_output_tokens']} output tokens; at most {dry_run_cost(metrics)}"
        )
    parts = [f"invalid={metrics['invalid_pct']:.1f}%"] if metrics.get("invalid_pct") is not None else []
    if "spearman" in metrics or "spearman_note" in metrics:  # a correlation that could mislead is marked, as on
        parts.append(metrics_line(metrics, ("spearman", "pearson")))  # the run's line, its note said once
    return " ".join(parts) or "no labels"


def _baseline_note(model: str) -> str:
    """The random baseline's 100 % invalid, explained on its cell's line (harness/calling/backends/offline.py)."""
    return " (by design: no number, every prediction a fallback draw)" if model == "random" else ""


def _write_sweep(
    base: RunConfig, grid: Mapping[str, Sequence[Any]], results: list[Cell], written: dict[Path, Run]
) -> Path:
    """Stage sweep.json and the report, then rename the folder into place."""
    results_dir = base.results_dir
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    claimed = claim(results_dir, f"sweep-{stamp}", explicit=False)
    with staged(claimed) as staging:
        record = {
            "created": stamp,
            "grid": {name: list(grid.get(name, [getattr(base, name)])) for name in GRID_FIELDS},
            "split": base.split,
            "seed": base.seed,
            "limit": base.limit,
            "shard": list(base.shard) if base.shard is not None else None,
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
            from harness.reporting.report import write_report  # deferred: matplotlib only when a sweep finishes

            # One job's part of a --shard sweep: its own rows (`report` over every part's sweep merges them).
            merge = base.shard is None
            write_report([c.run_dir for c in results], staging / "report", loaded=written, merge=merge)
    return claimed.final
