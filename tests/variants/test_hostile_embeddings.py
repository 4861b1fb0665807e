"""Embedding replies that cannot be used (issue 41): another length than the others, a string, null, NaN, Infinity,
a vector of 70,000 numbers (past MAX_DIM), one of a million (a reply too long to parse). Through --variant case and
qa-embed, with the real OpenAI SDK against tests/fake_server.py on 127.0.0.1: each item with such a vector is an error
with its reason code (counted in metrics.json), the others are scored as the server's vectors say, and a rerun from
the cache reads them the same way and buys nothing again. These runs ended in a traceback, on every rerun, before."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from scipy.stats import spearmanr

from harness.cli.main import main
from harness.datasets.choose import load_dataset
from harness.scoring.vectors import MAX_DIM
from tests.fake_server import EMBEDDINGS, FakeServer
from tests.variants.test_qa_run import fake_answer

BAD: dict[str, Any] = {
    "other-length": [1.0, 2.0, 3.0],
    "not-a-list (string)": "not a vector",
    "not-a-list (null)": None,
    "not-finite (NaN)": [float("nan")] * 8,
    "not-finite (inf)": [float("inf")] * 8,
    "too-long": [0.5] * (MAX_DIM + 4464),
    "too-long (a reply over 4 MiB, never parsed)": [0.5] * 1_000_000,
}


def bad_kind(text: str) -> str | None:
    """A fifth of the texts (by their hash) get a bad vector, each kind in turn."""
    h = int(hashlib.sha256(text.encode()).hexdigest(), 16)
    return sorted(BAD)[h // 5 % len(BAD)] if h % 5 == 0 else None


def corrupt(endpoint: str, request: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
    if endpoint == EMBEDDINGS:
        texts = request["input"] if isinstance(request["input"], list) else [request["input"]]
        for item, text in zip(reply["data"], texts, strict=True):
            kind = bad_kind(text)
            item["embedding"] = item["embedding"] if kind is None else BAD[kind]
    return reply


def twice(argv: list[str], results: Path, server: FakeServer) -> tuple[dict[str, Any], list[dict[str, Any]], int]:
    """Run, then rerun from the cache: (metrics, samples) of the first run, and the requests the rerun sent."""
    assert main([*argv, "--results-dir", str(results), "--run-id", "first"]) == 3  # items without a prediction
    bought = len(server.calls)
    assert main([*argv, "--results-dir", str(results), "--run-id", "again"]) == 3
    first = (results / "first" / "samples.jsonl").read_text()
    assert (results / "again" / "samples.jsonl").read_text() == first
    metrics = json.loads((results / "first" / "metrics.json").read_text())
    return metrics, [json.loads(line) for line in first.splitlines()], len(server.calls) - bought


def test_the_case_variant_keeps_items_with_unusable_vectors_out_and_says_why(
    csts_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeServer(extras=corrupt) as server:
        argv = ["--variant", "case", "--backend", "openai", "--model", "text-embedding-3-small", "--limit", "30",
                "--data-dir", str(csts_dir), "--base-url", server.openai_url, "--no-progress",
                "--case-setting", "plain", "--cache", str(tmp_path / "cache.sqlite")]  # fmt: skip
        metrics, samples, rebought = twice(argv, tmp_path, server)
    texts = [c.prompt for c in server.calls]
    kinds = {k for t in texts if (k := bad_kind(t)) is not None}
    assert rebought == 0 and len(kinds) >= 4  # the rerun bought nothing; most kinds were sent
    failed = [s for s in samples if s["error"]]
    assert failed and all(s["prediction"] is None and s["reason"] == "error" for s in failed)
    assert all("unusable-embedding: " in s["error"] for s in failed)
    ok = [s for s in samples if not s["error"]]
    assert metrics["n"] == len(ok) and metrics["errors"] == len(failed)  # the items that have predictions, counted
    labels = {e.id: e.label for e in load_dataset("csts", "validation", data_dir=csts_dir).examples}
    want = spearmanr([s["prediction"] for s in ok], [labels[s["id"]] for s in ok]).statistic
    assert metrics["spearman"] == pytest.approx(100 * want)  # over the items with a prediction only
    refused = [t for t in set(texts) if bad_kind(t) is not None]
    counted = metrics["unusable_embeddings"]
    assert sum(counted.values()) == len(refused) and set(counted) <= {
        "other-length",
        "not-a-list",
        "not-finite",
        "too-long",
    }
    err = capsys.readouterr().err
    assert "Traceback" not in err and f"warning: {len(refused)} embeddings the server sent cannot be used (" in err
    assert "failed requests are not cached" not in err  # they are: a rerun would not retry them


def test_qa_embed_keeps_items_with_unusable_vectors_out_and_says_why(csts_dir: Path, tmp_path: Path) -> None:
    with FakeServer(answer=fake_answer, extras=corrupt) as server:
        argv = ["--backend", "openai", "--model", "text-embedding-3-small", "--answer-model", "answerer",
                "--variant", "qa-embed", "--limit", "30", "--data-dir", str(csts_dir), "--base-url",
                server.openai_url, "--no-progress", "--cache", str(tmp_path / "cache.sqlite")]  # fmt: skip
        metrics, samples, rebought = twice(argv, tmp_path, server)
    assert rebought == 0
    failed = [s for s in samples if s["error"]]
    assert failed and all(s["prediction"] is None for s in failed)
    assert {s["error"].split(": ")[1] for s in failed} <= {"other-length", "not-a-list", "not-finite", "too-long"}
    assert metrics["n"] == len(samples) - len(failed) and metrics["errors"] == len(failed)
    assert sum(metrics["unusable_embeddings"].values()) > 0
