"""A metric is one function and one entry in METRICS (docs/extending.md "A new metric"): a toy metric,
tests/scoring/toy_metric.py, gets its entry here and nowhere else, and is then computed by a real run of the
offline overlap baseline, printed on its summary line, kept in metrics.json and shown in the report."""

from __future__ import annotations

import html
import json
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import kendalltau

from harness.cli.main import main
from harness.scoring.metrics import METRICS, Metric
from tests.scoring.toy_metric import kendall_tau_b

# The one line a new metric adds to harness/scoring/metrics.py METRICS.
TOY = Metric(kendall_tau_b, "Kendall's tau-b")
# What docs/extending.md "A new metric" must name (tests/docs/test_extending.py checks it does).
DOCUMENTED = ("harness/scoring/metrics.py",)


def test_the_toy_metric_is_kendalls_tau_b() -> None:
    """Checked against scipy's on a table of cases with ties on both sides."""
    rng = np.random.default_rng(0)
    for n in (2, 5, 30):
        pred, gold = rng.integers(1, 4, n).astype(float), rng.integers(1, 6, n).astype(float)
        expected = kendalltau(pred, gold).statistic
        got = kendall_tau_b(pred, gold)
        assert (got is None and np.isnan(expected)) or got == pytest.approx(100 * expected)


def test_a_new_metric_runs_end_to_end(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(METRICS, "kendall", TOY)
    argv = ["--model", "overlap", "--dataset", "stsb", "--limit", "40", "--shots", "0", "--no-progress"]
    assert main([*argv, "--results-dir", str(tmp_path), "--run-id", "run"]) == 0
    run = tmp_path / "run"
    samples = [json.loads(x) for x in (run / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    expected = 100 * kendalltau([s["prediction"] for s in samples], [s["label"] for s in samples]).statistic
    metrics = json.loads((run / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["kendall"] == pytest.approx(expected)
    assert f"kendall={metrics['kendall']:.2f}" in capsys.readouterr().out  # the run's summary line

    assert main(["report", str(run), "--out", str(tmp_path / "report")]) == 0
    md = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    part = md[md.index("## More metrics") :]
    cells = [[c.strip() for c in x.strip().strip("|").split("|")] for x in part.splitlines() if x.startswith("| ")]
    header, r1 = cells[0], next(r for r in cells if r[0] == "R1")
    columns = dict(zip(header, r1, strict=True))  # by the column's name: a metric added later moves no column
    assert columns["Kendall's tau-b (kendall)"] == f"{expected:.2f}"
    assert columns[f"{METRICS['mse'].title} (mse)"] == f"{metrics['mse']:.2f}"
    page = html.unescape((tmp_path / "report" / "index.html").read_text(encoding="utf-8"))
    assert '<section id="metrics">' in page and f"<td>{expected:.2f}</td>" in page
