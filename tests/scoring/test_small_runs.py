"""Small runs flagged where their correlation is shown (issue 34): the band chance alone reaches at n items,
checked against scipy's Pearson test, and the note on the run's lines and in the report with the run's interval."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import pearsonr

from harness.cli.main import main
from harness.scoring.stats import SMALL_N, chance_band, small_run_note


def with_correlation(r: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Two samples whose Pearson correlation is exactly r."""
    rng = np.random.default_rng(n)
    x, z = rng.normal(size=n), rng.normal(size=n)
    x, z = x - x.mean(), z - z.mean()
    z -= (z @ x) / (x @ x) * x  # orthogonal to x
    x, z = x / np.linalg.norm(x), z / np.linalg.norm(z)
    return x, r * x + np.sqrt(1 - r * r) * z


@pytest.mark.parametrize("n", [10, 100, 200, 1500])
def test_the_chance_band_is_where_scipys_pearson_test_gives_p_0_05(n: int) -> None:
    band = chance_band(n)
    assert band is not None
    x, y = with_correlation(band / 100, n)
    result = pearsonr(x, y)
    assert result.statistic == pytest.approx(band / 100, abs=1e-12)
    assert result.pvalue == pytest.approx(0.05, abs=1e-9)


def test_the_random_baselines_minus_18_at_n_100_is_inside_the_band_and_says_so() -> None:
    assert round(chance_band(100), 2) == 19.66  # type: ignore[arg-type]
    assert small_run_note(100, -18.19) == (
        "n=100 is a small run: a correlation within ±19.7 of zero arises by chance alone at this n (1 time in 20 "
        "with random predictions), so Spearman -18.19 cannot be told from zero"
    )
    assert small_run_note(100, 40.0).endswith("so Spearman 40.00 is only roughly known")  # type: ignore[union-attr]
    assert small_run_note(SMALL_N, -18.19) is None and small_run_note(100, None) is None


def test_a_small_run_is_flagged_on_its_lines_and_in_its_report_with_its_interval(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "r"
    argv = ["--model", "random", "--dataset", "stsb", "--no-progress", "--results-dir", str(tmp_path)]
    assert main([*argv, "--limit", "100", "--run-id", "r"]) == 0
    out = capsys.readouterr().out
    spearman = float(re.search(r" spearman=(-?[\d.]+)", out).group(1))  # type: ignore[union-attr]
    note = small_run_note(100, spearman)
    assert f"note: {note} (the report, `run_eval.py report RUN`, shows its 95% bootstrap CI)" in out.splitlines()
    assert main(["report", str(run), "--out", str(tmp_path / "rep")]) == 0
    report = (tmp_path / "rep" / "report.md").read_text()
    ci = re.search(rf"\| {spearman:.2f} (\[-?[\d.]+, -?[\d.]+\]) \|", report).group(1)  # type: ignore[union-attr]
    assert f"- R1 (random, none, k=0): {note}; its 95% bootstrap CI is {ci}\n" in report
    capsys.readouterr()
    assert main([*argv, "--limit", str(SMALL_N), "--run-id", "big"]) == 0
    assert "small run" not in capsys.readouterr().out


def test_a_run_of_enough_items_gets_no_note_and_never_imports_scipy() -> None:
    """At n >= SMALL_N there is no note, so its band (scipy.stats's t quantile) is never looked up: a sweep's
    report of full C-STS cells imports no scipy for it (a second of a 9-cell grid's CPU)."""
    import subprocess
    import sys

    code = (
        "import sys; from harness.scoring.stats import SMALL_N, small_run_note; "
        "print(small_run_note(SMALL_N, 40.0), small_run_note(2834, -3.0), 'scipy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["None", "None", "False"]
    assert small_run_note(SMALL_N - 1, 40.0) is not None  # one item fewer: the note, with its band
