"""A batch answer is the one-by-one answer: both go through the backend's `completion_from`, so refusals,
finish_reason, usage and the served model come out the same, and raw prompts to an OpenAI-compatible server
go to /v1/completions in a batch too. The real SDKs against tests/fake_batch_server.py on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli.main import main
from tests.fake_batch_server import FakeBatchServer
from tests.fake_server import REFUSAL, default_answer

BATCH = ("--batch", "--batch-poll", "0.05")
FIELDS = ("output", "prediction", "valid", "reason", "finish_reason", "refusal", "served_model", "usage", "error")
KINDS = ["refusal", "empty", "length", "ok"]  # a raw Completions reply has no refusal field: no "refusal" there


def kinds_for(chat: bool) -> list[str]:
    return KINDS if chat else KINDS[1:]


def kind(prompt: str, chat: bool = True) -> str:
    kinds = kinds_for(chat)
    return kinds[int(default_answer(prompt).replace(".", "")) % len(kinds)]


def args(url: str, model: str, results: Path, *extra: str) -> list[str]:
    return ["--model", model, "--base-url", url, "--dataset", "stsb", "--limit", "24", "--results-dir", str(results),
            "--run-id", "r", "--no-progress", *extra]  # fmt: skip


def samples(run_dir: Path) -> dict[str, dict]:
    rows = [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]
    return {r["id"]: r for r in rows}


@pytest.mark.parametrize(
    ("backend", "model", "chat"),
    [("openai", "gpt-4o-mini", True), ("openai", "my-model", False), ("anthropic", "claude-haiku-4-5", True)],
)
def test_batch_and_one_by_one_replies_are_read_alike(backend: str, model: str, chat: bool, tmp_path: Path) -> None:
    with FakeBatchServer(plan=lambda p, a: kind(p, chat), served_model="snapshot-1") as server:
        url = server.openai_url if backend == "openai" else server.anthropic_url
        base = ["--backend", backend]
        assert main(args(url, model, tmp_path / "one", *base)) == 0
        sent_one_by_one = {c.path for c in server.calls}
        assert main(args(url, model, tmp_path / "batch", *base, *BATCH)) == 0
    (batch,) = server.batches.values()
    endpoint = "/v1/messages" if backend == "anthropic" else "/v1/chat/completions" if chat else "/v1/completions"
    assert sent_one_by_one == {endpoint}
    if backend == "openai":  # a raw prompt's batch line goes to /v1/completions with the prompt verbatim
        assert batch.endpoint == endpoint and all(("prompt" in body) != chat for _, body in batch.items)
    config = json.loads((tmp_path / "batch" / "r" / "config.json").read_text())
    assert config["backend_params"]["chat"] is chat
    one, by_batch = samples(tmp_path / "one" / "r"), samples(tmp_path / "batch" / "r")
    assert len(one) == 24 and {kind(s["prompt"], chat) for s in one.values()} == set(kinds_for(chat))
    for i, s in one.items():
        assert {f: s[f] for f in FIELDS} == {f: by_batch[i][f] for f in FIELDS}
        expected = {"refusal": "refusal", "empty": "no-number", "length": "number", "ok": "number"}
        assert s["reason"] == expected[kind(s["prompt"], chat)] and s["served_model"] == "snapshot-1"
    refused = [s for s in by_batch.values() if kind(s["prompt"], chat) == "refusal"]
    assert all(s["output"] == "" and s["refusal"] == REFUSAL for s in refused) and bool(refused) == chat
    assert {s["finish_reason"] for s in by_batch.values() if kind(s["prompt"], chat) == "length"} == {"length"}
