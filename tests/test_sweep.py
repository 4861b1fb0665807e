"""Grids in one command: every cell once, each its own run folder, finished cells reused on the next call."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.config.settings import RunConfig
from harness.results.read import finished_runs
from harness.sweep import cells, run_sweep
from harness.types import HarnessError


def _run_dirs(results: Path) -> list[Path]:
    return sorted(p.parent for p in results.glob("*/config.json"))


def _sweep_args(results: Path, csts_dir: Path) -> list[str]:
    return [
        "--model", "overlap,random",
        "--shots", "0,2",
        "--instr", "none,short",
        "--dataset", "csts,stsb",
        "--limit", "8",
        "--data-dir", str(csts_dir),
        "--results-dir", str(results),
        "--no-progress",
    ]  # fmt: skip


def test_cells_cover_the_product_once() -> None:
    configs = cells(RunConfig(model="x"), {"model": ["a", "b"], "shots": [0, 2, 4], "instr": ["none", "long"]})
    keys = {(c.model, c.shots, c.instr, c.dataset) for c in configs}
    assert len(configs) == len(keys) == 12


def test_sweep_runs_every_cell_once_and_writes_a_sweep_folder(tmp_path: Path, csts_dir: Path) -> None:
    results = tmp_path / "results"
    assert main(_sweep_args(results, csts_dir)) == 0
    runs = _run_dirs(results)
    sweeps = list(results.glob("sweep-*"))
    assert len(runs) == 16 and len(sweeps) == 1
    record = json.loads((sweeps[0] / "sweep.json").read_text())
    assert sorted(results / c["run_dir"] for c in record["cells"]) == runs
    settings = {(c["dataset"], c["model"], c["instr"], c["shots"]) for c in record["cells"]}
    assert len(settings) == 16
    assert (sweeps[0] / "report" / "report.md").is_file()


def test_second_sweep_reuses_finished_cells(tmp_path: Path, csts_dir: Path) -> None:
    results = tmp_path / "results"
    assert main(_sweep_args(results, csts_dir)) == 0
    first = _run_dirs(results)
    assert main(_sweep_args(results, csts_dir)) == 0
    assert _run_dirs(results) == first
    latest = max(results.glob("sweep-*"), key=lambda p: p.name)
    record = json.loads((latest / "sweep.json").read_text())
    assert all(c["reused"] for c in record["cells"])
    assert sorted(results / c["run_dir"] for c in record["cells"]) == first


def test_a_changed_setting_is_not_reused(tmp_path: Path, csts_dir: Path) -> None:
    results = tmp_path / "results"
    args = _sweep_args(results, csts_dir)
    assert main(args) == 0
    args[args.index("--limit") + 1] = "6"
    assert main(args) == 0
    assert len(_run_dirs(results)) == 32


def test_a_run_with_failed_requests_is_not_finished(tmp_path: Path) -> None:
    results = tmp_path / "results"
    assert main(["--model", "overlap", "--dataset", "stsb", "--limit", "3", "--results-dir", str(results)]) == 0
    (run,) = _run_dirs(results)
    config_hash = json.loads((run / "config.json").read_text())["config_hash"]
    assert finished_runs(results) == {config_hash: run}
    metrics = json.loads((run / "metrics.json").read_text())
    (run / "metrics.json").write_text(json.dumps(metrics | {"errors": 1}))
    assert finished_runs(results) == {}


def test_a_bad_value_fails_before_any_cell_runs(tmp_path: Path, csts_dir: Path, capsys: pytest.CaptureFixture) -> None:
    results = tmp_path / "results"
    args = _sweep_args(results, csts_dir)
    args[args.index("--instr") + 1] = "none,bogus"
    assert main(args) == 2
    assert "unknown instruction level 'bogus'" in capsys.readouterr().err
    assert _run_dirs(results) == []


def test_run_id_with_a_grid_is_refused() -> None:
    with pytest.raises(HarnessError, match="--run-id"):
        cells(RunConfig(model="a", run_id="mine"), {"model": ["a", "b"]})


def test_a_cell_line_carries_its_correlation_notes(tmp_path: Path, csts_dir: Path) -> None:
    lines: list[str] = []
    base = RunConfig(model="overlap", data_dir=csts_dir, results_dir=tmp_path, limit=6, progress=False)
    run_sweep(base, {"model": ["overlap", "random"]}, log=lines.append)
    assert all("spearman=" in line and "† n=6" in line for line in lines), lines


def test_a_sweep_plans_each_cell_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness import runner

    planned: list[RunConfig] = []
    real_plan = runner.plan

    def counting_plan(config: RunConfig, shared: runner.Shared | None = None) -> runner.Planned:
        planned.append(config)
        return real_plan(config, shared)

    monkeypatch.setattr(runner, "plan", counting_plan)  # run() looks plan up in runner's namespace too
    base = RunConfig(model="overlap", dataset="stsb", results_dir=tmp_path, limit=4, progress=False)
    result = run_sweep(base, {"model": ["overlap", "random"], "shots": [0, 2]}, log=lambda line: None)
    assert len(result.cells) == 4 and not any(c.reused for c in result.cells)
    assert sorted((c.model, c.shots) for c in planned) == [("overlap", 0), ("overlap", 2), ("random", 0), ("random", 2)]


@pytest.mark.parametrize(
    ("split", "sampler", "dry_run"),
    [("validation", "seeded", False), ("validation", "seeded", True), ("test", "reference", False)],
    ids=["run", "dry-run", "test-split-reference-shots"],  # the reference sampler of test also reads validation
)
def test_a_sweep_decrypts_the_archive_once_and_parses_each_file_once(
    split: str,
    sampler: str,
    dry_run: bool,
    tmp_path: Path,
    csts_archive: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from harness.datasets import load

    decrypted: list[Path] = []
    parsed: list[str] = []
    real_decrypt, real_parse = load.decrypt_release, load.parse_csts_csv

    def counting_decrypt(archive: Path, password: str, source: str) -> dict[str, bytes]:
        decrypted.append(archive)
        return real_decrypt(archive, password, source)

    def counting_parse(data: bytes, source: str, split: str, label_range: tuple[float, float]) -> tuple:  # type: ignore[type-arg]
        parsed.append(Path(source).name)
        return real_parse(data, source, split, label_range)

    monkeypatch.setattr(load, "decrypt_release", counting_decrypt)
    monkeypatch.setattr(load, "parse_csts_csv", counting_parse)
    archive, password = csts_archive
    base = RunConfig(model="overlap", archive=archive, password_file=password, results_dir=tmp_path / "results",
                     split=split, shot_sampler=sampler, dry_run=dry_run, limit=6, progress=False)  # fmt: skip
    grid = {"model": ["overlap", "random"], "instr": ["none", "short", "long"], "shots": [0, 2]}
    result = run_sweep(base, grid, log=lambda line: None)
    assert len(result.cells) == 12
    assert len(decrypted) == 1
    assert sorted(parsed) == sorted(set(parsed)) and f"csts_{split}.csv" in parsed and "csts_train.csv" in parsed


def test_a_sweep_report_is_the_report_of_its_run_folders(tmp_path: Path, csts_dir: Path) -> None:
    """The sweep reports from the runs it holds in memory; `report` reads the same runs from their folders. Every
    file must come out the same, byte for byte."""
    results = tmp_path / "results"
    args = _sweep_args(results, csts_dir)
    assert main([*args, "--parse", "strict"]) == 0
    (sweep,) = results.glob("sweep-*")
    assert main(["report", str(sweep), "--out", str(tmp_path / "again")]) == 0
    written = sorted(p.name for p in (sweep / "report").iterdir())
    assert written == sorted(p.name for p in (tmp_path / "again").iterdir()) and "index.html" in written
    for name in written:
        assert (sweep / "report" / name).read_bytes() == (tmp_path / "again" / name).read_bytes(), name


def test_a_sweep_gives_back_the_garbage_collector_settings(tmp_path: Path, csts_dir: Path) -> None:
    import gc

    before = gc.get_threshold()
    base = RunConfig(model="overlap", data_dir=csts_dir, results_dir=tmp_path, limit=4, progress=False)
    run_sweep(base, {"shots": [0, 2]}, log=lambda line: None)
    with pytest.raises(HarnessError):
        run_sweep(dataclasses.replace(base, template="missing"), {"shots": [0, 2]}, log=lambda line: None)
    assert gc.get_threshold() == before
