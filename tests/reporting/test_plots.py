"""Plots: one line or bar per row label (no run hidden), published marks only where published and comparable."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt

from harness.reporting.plots import invalid_figure, spearman_figure
from harness.reporting.report import build_table
from tests.synthetic_runs import make_run


def _legend(fig: object) -> list[str]:
    labels = [t.get_text() for t in fig.legends[0].get_texts()]  # type: ignore[attr-defined]
    plt.close(fig)  # type: ignore[arg-type]
    return labels


def test_no_published_legend_entry_when_nothing_is_published(tmp_path: Path) -> None:
    table = build_table([make_run(tmp_path, "m", model="my-model", dataset="stsb")], n_bootstrap=20)
    assert _legend(invalid_figure(table)) == ["my-model"]
    assert _legend(spearman_figure(table)) == ["my-model"]


def test_published_marks_only_beside_a_comparable_run(tmp_path: Path) -> None:
    full = build_table([make_run(tmp_path, "full", n=2834)], n_bootstrap=20)
    assert sorted(_legend(invalid_figure(full))) == ["gpt-4", "published"]
    assert _legend(spearman_figure(full)) == ["gpt-4", "gpt-4 (published)"]
    partial = build_table([make_run(tmp_path, "partial", n=9)], n_bootstrap=20)
    assert _legend(invalid_figure(partial)) == ["gpt-4"]
    assert _legend(spearman_figure(partial)) == ["gpt-4"]


def test_runs_that_differ_in_a_setting_are_separate_lines_and_bars(tmp_path: Path) -> None:
    hf = {"backend": "hf", "backend_params": {"chat_template": False}}
    runs = [
        make_run(tmp_path, "raw", model="m", config=hf),
        make_run(tmp_path, "chat", model="m", offset=1, config=hf | {"backend_params": {"chat_template": True}}),
        make_run(tmp_path, "dry", model="m", dry_run=True),
    ]
    table = build_table(runs, n_bootstrap=20)
    assert _legend(spearman_figure(table)) == ["m · raw", "m · chat"]
    assert _legend(invalid_figure(table)) == ["m · raw", "m · chat"]
