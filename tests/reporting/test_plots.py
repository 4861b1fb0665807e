"""Plots: one line or bar per row label (no run hidden), published marks only where published and comparable."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from harness.reporting.plots import DPI, _save, invalid_figure, spearman_figure
from harness.reporting.report import build_table
from tests.synthetic_runs import make_run


def _legend(fig: object) -> list[str]:
    return [t.get_text() for t in fig.legends[0].get_texts()]  # type: ignore[attr-defined]


def test_no_published_legend_entry_when_nothing_is_published(tmp_path: Path) -> None:
    table = build_table([make_run(tmp_path, "m", model="my-model", dataset="stsb")], n_bootstrap=20)
    assert _legend(invalid_figure(table)) == ["my-model"]
    assert _legend(spearman_figure(table)) == ["my-model"]


# Every setting as Deshpande et al. published it (reporting/paper_settings.py): the snapshot and the shot stream.
AS_PUBLISHED = {"model": "gpt-4-0314", "config": {"shot_sampler": "reference"}}


def test_published_marks_only_beside_a_comparable_run(tmp_path: Path) -> None:
    full = build_table([make_run(tmp_path, "full", n=2834, **AS_PUBLISHED)], n_bootstrap=20)  # type: ignore[arg-type]
    assert sorted(_legend(invalid_figure(full))) == ["gpt-4-0314", "published"]
    assert _legend(spearman_figure(full)) == ["gpt-4-0314", "gpt-4-0314 (published)"]
    partial = build_table([make_run(tmp_path, "partial", n=9, **AS_PUBLISHED)], n_bootstrap=20)  # type: ignore[arg-type]
    assert _legend(invalid_figure(partial)) == ["gpt-4-0314"]
    assert _legend(spearman_figure(partial)) == ["gpt-4-0314"]
    floating = build_table([make_run(tmp_path, "floating", n=2834)], n_bootstrap=20)  # gpt-4: not the snapshot
    assert _legend(spearman_figure(floating)) == ["gpt-4"]


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


def test_saved_pixels_are_those_of_savefig_tight(tmp_path: Path) -> None:
    """_save hands savefig a tight box it measured itself (one layout pass fewer): the PNG must hold the pixels
    savefig(bbox_inches="tight") draws, legend outside the axes and published marks included."""
    runs = [make_run(tmp_path, "full", n=2834, **AS_PUBLISHED), make_run(tmp_path, "other", model="m", offset=1)]  # type: ignore[arg-type]
    table = build_table(runs, n_bootstrap=20)
    for make in (spearman_figure, invalid_figure):
        reference = make(table)
        assert reference is not None
        reference.savefig(tmp_path / "tight.png", dpi=DPI, bbox_inches="tight")
        assert _save(make(table), tmp_path / "ours.png") == [tmp_path / "ours.png"]
        ours, theirs = (np.asarray(Image.open(tmp_path / f)) for f in ("ours.png", "tight.png"))
        assert ours.shape == theirs.shape and (ours == theirs).all()


def test_a_lone_k_shows_its_interval_as_a_bar(tmp_path: Path) -> None:
    """One k: a shaded band over a single x has no width, so the point alone would hide its CI."""
    from matplotlib.collections import LineCollection

    table = build_table([make_run(tmp_path, "one", model="m", dataset="stsb", shots=2)], n_bootstrap=50)
    row = table.iloc[0]
    assert row["spearman_lo"] < row["spearman"] < row["spearman_hi"]
    ax = spearman_figure(table).axes[0]  # type: ignore[union-attr]
    bars = [c for c in ax.collections if isinstance(c, LineCollection)]
    (segment,) = bars[0].get_segments()
    assert [tuple(p) for p in segment] == [(2.0, row["spearman_lo"]), (2.0, row["spearman_hi"])]
