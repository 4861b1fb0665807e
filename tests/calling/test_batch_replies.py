"""A batch answer is the one-by-one answer: both go through the backend's `completion_from`, so refusals,
finish_reason, usage and the served model come out the same, and raw prompts to an OpenAI-compatible server
go to /v1/completions in a batch too. The real SDKs against tests/fake_batch_server.py on 127.0.0.1."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from harness.calling.cache import ResponseCache
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


# --- result files that cannot be stored as-is, or that disagree with what was sent ------------------------------


def _text_of(provider: str, record: dict) -> dict:
    """The dict holding a result line's answer text (and its key: "content" or "text")."""
    if provider == "anthropic":
        return record["result"]["message"]["content"][0]
    return record["response"]["body"]["choices"][0]["message"]


def _set_text(provider: str, record: dict, text: str) -> dict:
    record = json.loads(json.dumps(record))
    block = _text_of(provider, record)
    block["text" if provider == "anthropic" else "content"] = text
    return record


@pytest.mark.parametrize("backend", ["openai", "anthropic"])
def test_a_batch_reply_holding_a_lone_surrogate_loses_no_answer(backend: str, tmp_path: Path) -> None:
    """One result line holds "\\ud800" (escaped in the JSONL, as json.dumps writes it): every answer is cached, the
    run folder holds the very text, and a rerun neither resubmits nor pays for anything."""
    odd = "3.0 \ud800 \x00"

    def tamper(provider: str, records: list[dict]) -> list[dict]:
        return [_set_text(provider, records[0], odd), *records[1:]]

    model = {"openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5"}[backend]
    with FakeBatchServer(tamper=tamper) as server:
        url = server.openai_url if backend == "openai" else server.anthropic_url
        argv = args(url, model, tmp_path, "--backend", backend, *BATCH)
        assert main(argv) == 0
        assert main([a if a != "r" else "again" for a in argv]) == 0  # the same command, another --run-id
    assert len(server.batches) == 1 and set(server.submitted.values()) == {1}
    for run in ("r", "again"):
        outputs = [s["output"] for s in samples(tmp_path / run).values()]
        assert outputs.count(odd) >= 1 and len(outputs) == 24 and None not in outputs
    assert len(ResponseCache(tmp_path / "cache.sqlite")) == len(server.submitted)


@pytest.mark.parametrize("backend", ["openai", "anthropic"])
def test_a_duplicate_custom_id_with_another_answer_is_reported_and_the_first_kept_everywhere(
    backend: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A result file names one request twice with different answers, and holds an id nobody sent: both reported
    (stderr, metrics.json), the first answer kept in the cache and in the run folder alike, and an identical rerun
    (every answer from the cache) gives the same predictions and reports the conflict again."""
    dup: list[str] = []

    def tamper(provider: str, records: list[dict]) -> list[dict]:
        dup.append(records[2]["custom_id"])
        second = _set_text(provider, records[2], "0.5")  # another answer (no default answer is below 1.0)
        stranger = records[0] | {"custom_id": "not-one-of-ours"}
        return [*records[:3], stranger, *records[3:], second]

    model = {"openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5"}[backend]
    with FakeBatchServer(tamper=tamper) as server:
        url = server.openai_url if backend == "openai" else server.anthropic_url
        argv = args(url, model, tmp_path, "--backend", backend, *BATCH)
        assert main(argv) == 0
        first_err = capsys.readouterr().err
        assert main([a if a != "r" else "again" for a in argv]) == 0  # the same command: all from the cache
        again_err = capsys.readouterr().err
    assert len(server.batches) == 1 and set(server.submitted.values()) == {1}
    assert f"1 requests came back more than once with different outcomes (custom_id {dup[0]})" in first_err
    assert "the first answer in the result file is kept" in first_err
    assert "1 result line names requests it never held (not-one-of-ours); ignored" in first_err
    assert "came back from their batch more than once with different outcomes" in again_err
    # The cache holds the first answer, and so does each run folder: every output is the server's own answer.
    db = sqlite3.connect(tmp_path / "cache.sqlite")
    stored = {t for (t,) in db.execute("SELECT text FROM responses")}
    prompt = server.prompt_of(backend, _body(server, dup[0]))  # custom_ids are the cache keys
    assert db.execute("SELECT text FROM responses WHERE key = ?", dup).fetchall() == [(default_answer(prompt),)]
    runs = [samples(tmp_path / run) for run in ("r", "again")]
    for run in runs:
        assert all(s["output"] == default_answer(s["prompt"]) and s["output"] in stored for s in run.values())
    assert [s["prediction"] for s in runs[0].values()] == [s["prediction"] for s in runs[1].values()]
    for run in ("r", "again"):
        batch = json.loads((tmp_path / run / "metrics.json").read_text())["dispatch"]["batch"]
        hit = [i for i, s in runs[0].items() if s["prompt"] == prompt]
        assert batch["conflicts"] == len(hit) >= 1 and batch["conflicting_ids"] == hit
        assert batch["unknown_ids"] == (1 if run == "r" else 0)
        assert "first answer in the result file is kept" in batch["conflict_rule"]


def _body(server: FakeBatchServer, custom_id: str) -> dict:
    (batch,) = server.batches.values()
    return dict(batch.items)[custom_id]


@pytest.mark.parametrize("backend", ["openai", "anthropic"])
def test_a_batch_result_of_no_answer_is_kept_and_a_gateways_error_in_it_is_that_requests_error(
    backend: str, tmp_path: Path
) -> None:
    """As one by one (tests/calling/test_replies.py, issue 41): a 200 result whose body is an error report is that
    request's error, asked again by the rerun; one of no answer's shape is kept as malformed, never bought again."""
    actions = ["200-error-502", "200-no-choices", "ok", "ok"]

    def plan(prompt: str, attempt: int) -> str:
        return actions[int(default_answer(prompt).replace(".", "")) % len(actions)]

    with FakeBatchServer(plan=plan) as server:
        url = server.openai_url if backend == "openai" else server.anthropic_url
        assert main(args(url, "gpt-4o-mini", tmp_path, "--backend", backend, *BATCH)) == 3
    rows = samples(tmp_path / "r").values()
    by = {a: [r for r in rows if plan(r["prompt"], 0) == a] for a in actions}
    assert by["200-error-502"] and by["200-no-choices"]
    assert all(
        r["error"] == "HTTP 502: Upstream provider is down (an error sent with status 200)" for r in by["200-error-502"]
    )
    assert all((r["reason"], r["error"]) == ("malformed", None) for r in by["200-no-choices"])
    assert all(r["error"] is None and r["reason"] != "malformed" for r in by["ok"])
