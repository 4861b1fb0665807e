"""Published yardsticks printed beside our numbers: Tu et al.'s 55.44 under a qa-embed run (§4.1), and their share
of changed labels ("55 %", §4.3.1) beside ours in the data report."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli.summary import qa_embed_yardstick
from harness.config.settings import ApiOptions, RunConfig
from harness.reporting.datasets import PUBLISHED_AGREEMENT, agreement, to_markdown

TU = RunConfig(
    model="text-embedding-ada-002", variant="qa-embed", labels="reannotated", answer_model="gpt-3.5-turbo-1106"
)
HEAD = "Tu et al. 2024 §4.1: Spearman 55.44 (GPT-3.5's answers, text-embedding-ada-002, 2,620 rows); yours: 51.20"


@pytest.mark.parametrize(
    ("changes", "n", "verdict"),
    [
        ({}, 2620, "comparable"),
        ({"answer_model": "gpt-4o"}, 2620, "not comparable: answer_model=gpt-4o (paper: gpt-3.5-turbo-1106)"),
        (
            {"answer_model": None},
            2620,
            "not comparable: answer_model=text-embedding-ada-002 (paper: gpt-3.5-turbo-1106)",
        ),
        (
            {"model": "text-embedding-3-small"},
            2620,
            "not comparable: model=text-embedding-3-small (paper: text-embedding-ada-002)",
        ),
        ({"answers": Path("a.jsonl")}, 2620, "not comparable: answers from a.jsonl (who wrote them is not checked)"),
        (
            {"api": ApiOptions(base_urls=("http://127.0.0.1:9/v1",))},
            2620,
            "not comparable: called http://127.0.0.1:9/v1, not the provider's API",
        ),
        ({}, 40, "not comparable: n=40 (paper: 2,620)"),
    ],
)
def test_a_qa_embed_run_prints_tus_number_beside_its_own(changes: dict, n: int, verdict: str) -> None:
    import dataclasses

    config = dataclasses.replace(TU, **changes)
    assert qa_embed_yardstick(config, {"n": n, "spearman": 51.2}) == f"{HEAD} ({verdict})"


def test_other_runs_print_no_yardstick() -> None:
    import dataclasses

    assert qa_embed_yardstick(dataclasses.replace(TU, labels="original"), {"n": 2834, "spearman": 1.0}) is None
    assert qa_embed_yardstick(dataclasses.replace(TU, variant="qa"), {"n": 2620, "spearman": 1.0}) is None


def test_the_data_report_sets_tus_share_of_changed_labels_beside_ours() -> None:
    original = {str(i): float(1 + i % 5) for i in range(20)}
    relabelled = {k: (v if int(k) % 4 else 1 + v % 5) for k, v in original.items()} | {"20": None}
    a = agreement(original, relabelled)  # 5 of 20 changed: 25 %
    a["published"] = PUBLISHED_AGREEMENT
    text = to_markdown({"datasets": {}, "agreement": a})
    assert "| ours | 20 |" in text and "| 75.0 | 25.0 |" in text
    assert f"| {PUBLISHED_AGREEMENT['spearman']:.2f} | – | – | 55 (§4.3.1) |" in text
