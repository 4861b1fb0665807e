"""What a newcomer meets in the first hour: typos named, every missing prerequisite at once, the model named on
its metrics line, the random baseline's 100 % invalid explained, a sweep ending with its page, benches that run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("typed", "meant"), [("gpt4", "gpt-4"), ("gpt4o", "gpt-4o"), ("smollm2", "smollm2-135m")])
def test_a_mistyped_model_gets_a_did_you_mean(typed: str, meant: str, capsys: pytest.CaptureFixture) -> None:
    assert main(["--model", typed, "--dataset", "stsb", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: unknown model {typed!r}: did you mean {meant!r}?") and err.count("\n") == 1


def test_a_headline_run_names_the_missing_key_and_the_missing_data_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    for variable in ("OPENAI_API_KEY", "CSTS_DATA_DIR", "CSTS_PASSWORD"):
        monkeypatch.delenv(variable, raising=False)
    assert main(["--model", "gpt-4o", "--shots", "4", "--instr", "long", "--results-dir", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "OPENAI_API_KEY is not set" in err and "no C-STS data given" in err
    assert not (tmp_path / "r").exists()


def test_the_random_baseline_says_why_it_is_100_percent_invalid(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    argv = ["--dataset", "stsb", "--limit", "20", "--no-progress", "--results-dir", str(tmp_path)]
    assert main(["--model", "random", *argv]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("random: n=20  invalid_pct=100.00")
    assert lines[1].startswith("note: the random baseline replies with no number by design")


def test_a_sweep_ends_with_its_report_page(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    argv = ["--model", "overlap,random", "--dataset", "stsb", "--limit", "20", "--results-dir", str(tmp_path)]
    assert main([*argv, "--no-progress"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "(by design: no number, every prediction a fallback draw)" in next(x for x in out if " random " in x)
    last = out[-1]
    assert last.startswith("html: ") and last.endswith("/report/index.html")
    assert Path(last.removeprefix("html: ")).is_file()


@pytest.mark.parametrize("script", sorted(p.name for p in (ROOT / "tests" / "bench").glob("bench_*.py")))
def test_each_benchmark_starts_as_documented(script: str, tmp_path: Path) -> None:
    """`python tests/bench/bench_X.py --help` from the repository root with no PYTHONPATH (the README's form)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, f"tests/bench/{script}", "--help"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage:" in done.stdout


@pytest.mark.slow  # runs the report benchmark
def test_the_report_benchmark_times_a_report_of_unaltered_runs() -> None:
    """bench_report.py edits its synthetic prompts after writing each run: the manifest must be written after that,
    or every folder is flagged "altered" and the benchmark times a report no user would see."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "tests/bench/bench_report.py", "--runs", "2", "--chromium", ""],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("write_report: 2 runs x 2,834 samples")
    assert "altered" not in done.stderr and "warning" not in done.stderr
