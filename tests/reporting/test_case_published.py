"""Zhang et al. 2025 (CASE) Tables 1, 3, 4 in paper_results.csv, with their encoders; no run of ours is set against
them (their test part of their own re-annotation is not in the harness), and another encoder matches nothing."""

from __future__ import annotations

import json
from pathlib import Path

from harness.cli.main import main
from harness.reporting.published import load_published, match, not_comparable
from harness.results.read import load_run
from tests.fake_server import FakeServer

SPLIT = "zhang2025-test-851"


def test_tables_1_3_and_4_are_there_with_their_encoders() -> None:
    rows = [p for p in load_published() if p.source.startswith("Zhang et al. 2025")]
    assert len(rows) == 24 + 12 + 2
    nv = match(rows, "nvidia/NV-Embed-v2", "csts", SPLIT, "none", 0, "case-cond-c", "zhang2025")
    assert nv is not None and nv.spearman == 37.61 and nv.pearson is None
    ffn = match(rows, "nvidia/NV-Embed-v2", "csts", SPLIT, "none", 0, "case-cond-c-ffn-nonlinear", "zhang2025")
    assert ffn is not None and ffn.spearman == 74.94 and "Table 3" in ffn.source
    simcse = match(rows, "princeton-nlp/sup-simcse-roberta-large", "csts", SPLIT, "none", 0, "case-cond-c", "zhang2025")
    assert simcse is not None and simcse.spearman == 8.58  # CONC(c+s) - c, --case-inputs concat
    why = not_comparable(nv, 851, 0, {})
    mine = "Zhang et al. 2025's own 851-item test part of their re-annotation, which the harness does not have"
    assert why == f"not comparable ({mine})"


def test_a_case_run_is_named_by_its_setting_and_never_matches_the_paper(csts_dir: Path, tmp_path: Path) -> None:
    argv = ["--variant", "case", "--backend", "openai", "--model", "nvidia/NV-Embed-v2", "--data-dir",
            str(csts_dir), "--results-dir", str(tmp_path), "--run-id", "nv", "--no-progress", "--limit", "4",
            "--base-url", ""]  # fmt: skip
    with FakeServer() as server:
        argv[-1] = server.openai_url
        assert main(argv) == 0
    run = load_run(tmp_path / "nv")
    assert run.variant == "case-cond-c"
    published = load_published()
    model, dataset = run.config["model"], run.config["dataset"]
    assert match(published, model, dataset, run.split, run.instr, 0, run.variant, run.labels) is None
    for model in ("sentence-transformers/all-MiniLM-L6-v2", "text-embedding-3-small"):  # not in the paper
        assert match(published, model, "csts", SPLIT, "none", 0, "case-cond-c", "zhang2025") is None
    assert json.loads((tmp_path / "nv" / "config.json").read_text())["case"]["setting"] == "cond-c"
