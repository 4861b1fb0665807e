"""Zhang et al. 2025 (CASE) Tables 1, 3, 4 and 10 in paper_results.csv, with their encoders; no run of ours is set
against them (their test part of their own re-annotation is not in the harness), and another encoder matches nothing."""

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
    assert len(rows) == 24 + 12 + 2 + 28
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


def test_table_10_holds_each_pooling_and_repeats_table_1_for_the_pooling_table_1_used() -> None:
    """Table 10 (App. D) gives each LLM encoder's settings per pooling method (its SimCSE rows repeat Table 1 with no
    pooling named, so they are not held twice); Table 1 printed one pooling per encoder: NV's latent attention,
    SFR's and E5's average, GTE's last token. Checked on the two tables as transcribed, row by row."""
    rows = [p for p in load_published() if p.source == "Zhang et al. 2025 (CASE), Table 10"]
    assert len(rows) == 28 and all(p.split == SPLIT and p.labels == "zhang2025" for p in rows)
    table1 = {
        (p.model, p.variant): p.spearman for p in load_published() if p.source == "Zhang et al. 2025 (CASE), Table 1"
    }
    used = {"NV-Embed-v2": "latent", "SFR-Embedding-Mistral": "average", "gte-Qwen2-7B-instruct": "last"}
    used["multilingual-e5-large-instruct"] = "average"
    for model, pool in used.items():
        for setting in ("cond-c", "cond", "sent-c", "sent"):
            ten = match(rows, model_id(model), "csts", SPLIT, "none", 0, f"case-{setting}-pool-{pool}", "zhang2025")
            assert ten is not None and ten.spearman == table1[model, f"case-{setting}"], (model, setting)
    sfr_last = match(
        rows, "Salesforce/SFR-Embedding-Mistral", "csts", SPLIT, "none", 0, "case-sent-pool-last", "zhang2025"
    )
    assert sfr_last is not None and sfr_last.spearman == -0.18  # the other pooling: not in Table 1
    assert {p.variant.rsplit("-pool-", 1)[1] for p in rows} == {"latent", "last", "average"}


def model_id(name: str) -> str:
    from harness.reporting.published import ALIASES

    return ALIASES[name][0]
