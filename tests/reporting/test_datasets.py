"""The dataset report's pieces: label distributions, lengths, agreement between label sets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.datasets.labels import load_reannotated
from harness.reporting.datasets import agreement, label_distribution, length_stats
from harness.types import Example


def _ex(label: float | None) -> Example:
    return Example("0", "one two three", "four five", "c d", label)


def test_discrete_labels_are_counted_per_value() -> None:
    assert label_distribution([_ex(1.0), _ex(5.0), _ex(5.0), _ex(None)]) == {"1": 1, "5": 2, "hidden": 1}


def test_continuous_labels_are_binned_with_the_top_score_in_the_last_bin() -> None:
    dist = label_distribution([_ex(0.4), _ex(1.0), _ex(4.2), _ex(5.0)])
    assert dist == {"0–1": 1, "1–2": 1, "4–5": 2}


def test_length_stats_count_words() -> None:
    stats = length_stats(["a b c", "a", "a b"])
    assert (stats["mean_words"], stats["median_words"], stats["max_words"]) == (2.0, 2, 3)


def test_agreement_on_shared_ids_reports_what_was_left_out() -> None:
    a = {"0": 1.0, "1": 2.0, "2": 3.0, "3": 4.0, "4": None}
    b = {"0": 1.0, "1": 2.0, "2": 4.0, "3": None, "9": 5.0}
    result = agreement(a, b)
    assert result["n"] == 3
    assert result["exact_match_pct"] == pytest.approx(200 / 3)
    assert result["spearman"] == pytest.approx(100.0)
    assert result["left_out"] == {
        "absent from second set": 1,
        "unlabelled in second set": 1,
        "absent from first set": 1,
    }


def test_data_report_command_on_synthetic_csts(
    csts_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report.json"
    assert main(["data-report", "--dataset", "csts", "--data-dir", str(csts_dir), "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "| train | 80 |" in text and "| test | 20 | hidden: 20 |" in text
    report = json.loads(out.read_text())
    assert report["datasets"]["csts"]["validation"]["n"] == 24
    labelled = sum(load_reannotated()[str(i)] is not None for i in range(24))
    assert report["agreement"]["n"] == labelled  # synthetic rows 0..23 meet the vendored labels by row id
