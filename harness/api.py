"""The Python API: one setting or a grid from a script or a notebook, the same run folders as the command line.

    from harness import RunConfig, evaluate
    result = evaluate(RunConfig(model="overlap", dataset="stsb", limit=200))
    result.metrics["spearman"], result.run_dir, result.samples()

Errors the command line prints as one `error:` line (exit 2) are raised here as `HarnessError`, before anything
is sent or written, exactly as there.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from harness.config.settings import RunConfig
from harness.types import HarnessError

if TYPE_CHECKING:
    import pandas as pd

T = TypeVar("T")


@dataclass(frozen=True)
class Evaluation:
    """One finished run: its folder, and metrics.json as a dict (what `csts report` reads back)."""

    run_dir: Path
    metrics: dict[str, Any]

    def samples(self) -> pd.DataFrame:
        """samples.jsonl as a DataFrame, one row per query (id, prompt, output, prediction, label, valid, …)."""
        import pandas as pd

        with (self.run_dir / "samples.jsonl").open(encoding="utf-8") as f:
            return pd.DataFrame([json.loads(line) for line in f if line.strip()])


@dataclass(frozen=True)
class SweepEvaluation:
    """A grid: its sweep folder (report included) and every cell's run, in the order they ran."""

    sweep_dir: Path
    cells: tuple[Evaluation, ...]
    reused: tuple[bool, ...]  # a cell whose finished run folder was found and not run again


def evaluate(config: RunConfig | None = None, /, **settings: Any) -> Evaluation:
    """Run one setting: `evaluate(RunConfig(...))`, or `evaluate(model=..., shots=...)` for a RunConfig made here.

    Keyword settings given with a config replace its fields (`evaluate(base, shots=4)`)."""
    config = _config(config, settings)
    from harness.runner import run  # deferred: `import harness` stays light

    result = _outside_event_loop(lambda: run(config))
    return Evaluation(result.run_dir, result.metrics)


def evaluate_sweep(
    config: RunConfig | None = None, /, *, log: Callable[[str], None] = print, **grid: Iterable[Any]
) -> SweepEvaluation:
    """Run every combination of the listed values, e.g. `evaluate_sweep(base, shots=[0, 2, 4], instr=["none", "long"])`.

    Lists are accepted for dataset, model, instr and shots (the command line's comma lists); other keywords set
    one value for every cell. Finished cells in `config.results_dir` are reused, as on the command line."""
    from harness.sweep import GRID_FIELDS, run_sweep

    lists = {k: list(v) for k, v in grid.items() if k in GRID_FIELDS and not isinstance(v, str | int)}
    base = _config(config, {k: v for k, v in grid.items() if k not in lists})
    for k, values in lists.items():
        if not values:
            raise HarnessError(f"{k}=[] gives a grid with no cells")
        if k == "shots" and not all(isinstance(v, int) for v in values):
            raise HarnessError(f"shots={values!r}: every value must be an int")
        first: dict[str, Any] = {k: values[0]}
        base = dataclasses.replace(base, **first)
    result = _outside_event_loop(lambda: run_sweep(base, lists, log))
    runs = []
    for cell in result.cells:
        metrics = json.loads((cell.run_dir / "metrics.json").read_text(encoding="utf-8"))
        runs.append(Evaluation(cell.run_dir, metrics))
    return SweepEvaluation(result.sweep_dir, tuple(runs), tuple(c.reused for c in result.cells))


def _config(config: RunConfig | None, settings: dict[str, Any]) -> RunConfig:
    names = {f.name for f in dataclasses.fields(RunConfig)}
    unknown = sorted(set(settings) - names)
    if unknown:
        raise HarnessError(f"unknown setting {unknown[0]!r}; RunConfig has: {', '.join(sorted(names))}")
    if config is None:
        if "model" not in settings:
            raise HarnessError("evaluate() needs a model, e.g. evaluate(model='overlap', dataset='stsb')")
        config = RunConfig(**settings)
    else:
        config = dataclasses.replace(config, **settings)
    # A notebook writes results_dir="runs"; the run code expects the Path objects the CLI's argparse makes.
    paths = {f.name for f in dataclasses.fields(RunConfig) if "Path" in str(f.type)}
    strings: dict[str, Any] = {k: Path(getattr(config, k)) for k in paths if isinstance(getattr(config, k), str)}
    return dataclasses.replace(config, **strings) if strings else config


def _outside_event_loop(work: Callable[[], T]) -> T:
    """Run `work` here, or in a worker thread when this thread already runs an event loop (a Jupyter cell):
    the dispatcher starts its own loop, and asyncio allows one running loop per thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return work()
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(work).result()
