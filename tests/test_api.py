"""The Python API (harness/api.py): the same run folders and numbers as the command line, errors raised before
anything is written, usable from inside a running event loop (a notebook cell)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

import harness
from harness import HarnessError, RunConfig, evaluate, evaluate_sweep
from harness.cli.main import main


def _metrics(run_dir: Path) -> dict[str, object]:
    return json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))


def test_evaluate_writes_the_run_folder_the_command_line_writes(csts_dir: Path, tmp_path: Path) -> None:
    api = evaluate(model="overlap", data_dir=str(csts_dir), shots=2, instr="short", results_dir=str(tmp_path / "a"))
    assert (
        main(
            [
                "--model",
                "overlap",
                "--data-dir",
                str(csts_dir),
                "--shots",
                "2",
                "--instr",
                "short",
                "--results-dir",
                str(tmp_path / "c"),
            ]
        )
        == 0
    )
    (cli_dir,) = (tmp_path / "c").iterdir()
    assert api.run_dir.parent == tmp_path / "a" and api.run_dir.name.startswith("csts-validation-overlap-k2-short")
    cli = _metrics(cli_dir)
    assert api.metrics == _metrics(api.run_dir)
    assert {k: api.metrics[k] for k in ("spearman", "pearson", "invalid_pct", "n")} == {
        k: cli[k] for k in ("spearman", "pearson", "invalid_pct", "n")
    }
    frame = api.samples()
    cli_samples = [json.loads(x) for x in (cli_dir / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(frame) == api.metrics["n"] == len(cli_samples)
    assert frame["prediction"].tolist() == [s["prediction"] for s in cli_samples]
    assert frame["prompt"].tolist() == [s["prompt"] for s in cli_samples]


def test_a_config_and_keyword_overrides(csts_dir: Path, tmp_path: Path) -> None:
    base = RunConfig(model="overlap", data_dir=csts_dir, results_dir=tmp_path, limit=5)
    result = evaluate(base, shots=4, run_id="four")
    assert result.run_dir == tmp_path / "four"
    recorded = json.loads((result.run_dir / "config.json").read_text(encoding="utf-8"))
    assert (recorded["shots"], recorded["n_queries"]) == (4, 5)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"model": "overlap", "temprature": 0.5}, "unknown setting 'temprature'"),
        ({"dataset": "stsb"}, "needs a model"),
        ({"model": "overlap", "dataset": "nope"}, "nope"),
        ({"model": "overlap", "shots": -1}, "shots"),
    ],
)
def test_bad_settings_raise_before_anything_is_written(
    csts_dir: Path, tmp_path: Path, settings: dict[str, object], message: str
) -> None:
    results = tmp_path / "results"
    with pytest.raises(HarnessError, match=message):
        evaluate(**{"data_dir": csts_dir, "results_dir": results, **settings})
    assert not results.exists()


def test_evaluate_inside_a_running_event_loop(csts_dir: Path, tmp_path: Path) -> None:
    """A Jupyter cell runs inside an event loop; the dispatcher's own asyncio.run must still work."""

    async def cell() -> harness.Evaluation:
        return evaluate(model="random", data_dir=csts_dir, results_dir=tmp_path, limit=4)

    result = asyncio.run(cell())
    assert result.metrics["n"] == 4 and result.metrics["invalid_pct"] == 100.0


def test_evaluate_sweep_runs_each_cell_once_and_reuses_finished_ones(csts_dir: Path, tmp_path: Path) -> None:
    base = RunConfig(model="overlap", data_dir=csts_dir, results_dir=tmp_path, limit=4)
    logged: list[str] = []
    first = evaluate_sweep(base, shots=[0, 2], instr=["none", "long"], log=logged.append)
    assert len(first.cells) == 4 and first.reused == (False,) * 4 and len(logged) == 4
    shapes = {
        (json.loads((c.run_dir / "config.json").read_text())["shots"], c.run_dir.name.split("-")[-3])
        for c in first.cells
    }
    assert shapes == {(0, "none"), (2, "none"), (0, "long"), (2, "long")}
    assert (first.sweep_dir / "report" / "report.md").is_file()
    again = evaluate_sweep(base, shots=[0, 2], instr=["none", "long"], log=logged.append)
    assert again.reused == (True,) * 4
    assert [c.run_dir for c in again.cells] == [c.run_dir for c in first.cells]


def test_import_harness_stays_light() -> None:
    """The public names load on first use: `import harness` alone pulls no SDK, pandas or the runner."""
    import subprocess
    import sys

    code = (
        "import harness, sys; print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('openai', 'anthropic', 'pandas', 'scipy') or m == 'harness.runner'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        harness.nothing  # noqa: B018
