"""An embedding-protocol run in the report beside a prompting run on the same items: its settings section, the
same CIs as the report's own, and `compare`'s paired tests (synthetic C-STS; /v1/embeddings on tests/fake_server.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.reporting.compare import compare_runs
from harness.results.read import load_run
from harness.scoring.stats import compare_paired
from tests.fake_server import FakeServer


def _runs(csts_dir: Path, results: Path) -> tuple[Path, Path]:
    data = ["--data-dir", str(csts_dir), "--results-dir", str(results), "--no-progress", "--limit", "12"]
    with FakeServer() as server:
        argv = ["--variant", "case", "--model", "text-embedding-3-small", "--base-url", server.openai_url]
        assert main([*argv, *data, "--run-id", "case"]) == 0
    assert main(["--model", "overlap", *data, "--run-id", "llm"]) == 0  # a prompting run's folder (offline scorer)
    return results / "case", results / "llm"


def test_the_report_shows_every_setting_with_the_report_s_own_cis(csts_dir: Path, tmp_path: Path) -> None:
    case, llm = _runs(csts_dir, tmp_path / "r")
    assert main(["report", str(case), str(llm), "--out", str(tmp_path / "rep")]) == 0
    text = (tmp_path / "rep" / "report.md").read_text()
    part = text.split("## Embedding settings and isotropy (Zhang et al. 2025)", 1)[1].split("\n## ", 1)[0]
    metrics = json.loads((case / "metrics.json").read_text())["case"]["settings"]
    for setting, m in metrics.items():
        row = next(x for x in part.splitlines() if f"| {setting} |" in x or f"| {setting} (scored) |" in x)
        assert f"{m['spearman']:.2f} [{m['spearman_ci'][0]:.2f}, {m['spearman_ci'][1]:.2f}]" in row
        assert f"{m['isotropy']:.4f} ± {m['isotropy_sd']:.4f}" in row
        assert f"{m['cos_to_mean']['mean']:.3f} ± {m['cos_to_mean']['sd']:.3f}" in row
        assert "| whole, " in row  # an embeddings API pools the whole string: the pooling cell says so
    assert "cond-c (scored)" in part
    uncertainty = text.split("## Uncertainty", 1)[1]
    scored = metrics["cond-c"]
    ci = f"{scored['spearman']:.2f} [{scored['spearman_ci'][0]:.2f}, {scored['spearman_ci'][1]:.2f}]"
    assert re.search(re.escape(ci), uncertainty)  # the run's row in the report's own CI table: the same interval


def test_compare_pairs_the_embedding_run_with_the_prompting_run_item_by_item(csts_dir: Path, tmp_path: Path) -> None:
    case, llm = _runs(csts_dir, tmp_path / "r")
    a, b = load_run(case), load_run(llm)
    ids = [s.id for s in a.samples]
    by_b = {s.id: s for s in b.samples}
    expected = compare_paired(
        [s.prediction for s in a.samples],  # type: ignore[misc]
        [by_b[i].prediction for i in ids],  # type: ignore[misc]
        [s.label for s in a.samples],  # type: ignore[misc]
        [s.pair for s in a.samples],
    )
    table = compare_runs(case, llm)
    line = next(x for x in table.splitlines() if x.startswith("| all") and "| spearman |" in x)
    assert f"| {expected.a:.2f} | {expected.b:.2f} | {expected.diff:.2f} |" in line
    assert expected.p_williams is not None and pytest.approx(expected.p_williams, rel=1e-3) == float(
        line.rstrip(" |").split("|")[-1]
    )
