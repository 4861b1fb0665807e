"""What a reply holds is kept, and what it cannot be trusted with is not: through run_eval.py, real SDKs,
tests/fake_server.py. An unreadable reply is one request's problem; a reply without text is told apart
(malformed, refusal, empty answer); finish_reason, usage and the served model reach samples.jsonl; an
oversized reply is cut and flagged; a reply quoting the API key is redacted before it is stored."""

from __future__ import annotations

import json
import re
import sqlite3
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.calling.backends.base import REPLY_CAP_BYTES
from harness.cli.main import main
from harness.reporting.report import write_report
from tests.fake_server import HUGE_BYTES, REFUSAL, FakeServer, default_answer

KEY = "sk-test-secret-0123456789abcdef"


def argv(results: Path, server: FakeServer, run_id: str, *extra: str) -> list[str]:
    return ["--model", "gpt-4o", "--base-url", server.openai_url, "--dataset", "stsb", "--limit", "30",
            "--results-dir", str(results), "--run-id", run_id, "--no-progress", *extra]  # fmt: skip


def read(run_dir: Path) -> tuple[list[dict], dict]:
    rows = [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]
    return rows, json.loads((run_dir / "metrics.json").read_text())


def cached_rows(results: Path) -> list[tuple]:
    with sqlite3.connect(results / "cache.sqlite") as db:
        return db.execute("SELECT text, meta FROM responses").fetchall()


def test_unreadable_first_replies_do_not_end_the_run_or_lose_answers_in_flight(tmp_path: Path) -> None:
    """The first reply of every prompt is truncated JSON or not UTF-8; all are retried and answered."""
    with FakeServer(plan=lambda p, a: ("malformed", "utf8")[len(p) % 2] if a == 0 else "ok") as server:
        assert main(argv(tmp_path, server, "r", "--concurrency", "4")) == 0
    rows, metrics = read(tmp_path / "r")
    assert all(r["error"] is None and r["output"] == default_answer(r["prompt"]) for r in rows)
    assert metrics["dispatch"]["malformed"] == 30 and len(cached_rows(tmp_path)) == 30


def test_a_prompt_that_only_gets_unreadable_replies_is_that_requests_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = None

    def plan(prompt: str, attempt: int) -> str:
        nonlocal bad
        bad = bad or prompt  # the first prompt the server sees
        return "malformed" if prompt == bad else "ok"

    with FakeServer(plan=plan) as server:
        assert main(argv(tmp_path, server, "r")) == 3
    rows, metrics = read(tmp_path / "r")
    failed = [r for r in rows if r["error"]]
    assert len(failed) == 1 and failed[0]["prompt"] == bad and "gave up after 3 tries" in failed[0]["error"]
    assert Counter(server.received())[bad] == 3 and metrics["errors"] == 1
    assert len(cached_rows(tmp_path)) == 29
    assert "rerun the same command to retry only those" in capsys.readouterr().err


def test_null_refusal_empty_and_cut_off_replies_are_told_apart(tmp_path: Path) -> None:
    kinds = ["null", "refusal", "empty", "length", "ok"]

    def kind(prompt: str) -> str:
        return kinds[int(default_answer(prompt).replace(".", "")) % len(kinds)]

    with FakeServer(plan=lambda p, a: kind(p), served_model="gpt-4o-2024-08-06") as server:
        assert main(argv(tmp_path, server, "r", "--max-retries", "1")) == 3
    rows, _ = read(tmp_path / "r")
    by = {k: [r for r in rows if kind(r["prompt"]) == k] for k in kinds}
    assert all(by.values())
    # content null, no refusal: malformed, retried, then that request's error; never cached.
    assert all(r["output"] is None and "no text and no refusal" in r["error"] for r in by["null"])
    # A refusal is the model's answer: invalid, with the refusal recorded.
    assert all(r["output"] == "" and r["refusal"] == REFUSAL and not r["valid"] for r in by["refusal"])
    assert all(r["prediction"] is not None for r in by["refusal"])
    # An empty string with finish_reason stop is the model's answer: invalid.
    assert all(r["output"] == "" and r["finish_reason"] == "stop" and not r["valid"] for r in by["empty"])
    assert all(r["finish_reason"] == "length" and r["valid"] for r in by["length"])
    answered = [r for r in rows if r["error"] is None]
    assert all(r["served_model"] == "gpt-4o-2024-08-06" for r in answered)
    assert all(r["usage"] == {"input_tokens": len(r["prompt"].split()), "output_tokens": len(r["output"].split())}
               for r in answered)  # fmt: skip
    assert all(r["usage"] is None for r in by["null"])
    texts = Counter(json.loads(meta)["finish_reason"] for _, meta in cached_rows(tmp_path))
    assert texts == {"stop": len(by["refusal"]) + len(by["empty"]) + len(by["ok"]), "length": len(by["length"])}
    # parsing.reason_code reads the fields the backend filled: refusal, cut-off or not, failed.
    assert {r["reason"] for r in by["refusal"]} == {"refusal"} and {r["reason"] for r in by["null"]} == {"error"}
    assert {r["reason"] for r in by["empty"]} == {"no-number"} and {r["reason"] for r in by["length"]} == {"number"}
    # ... and the HTML report's sample browser carries them (harness/reporting/html.py SAMPLE_FIELDS).
    page = (write_report([tmp_path / "r"], tmp_path / "report") / "index.html").read_text()
    block = json.loads(re.search(r'<script type="application/json" id="samples-R1">(.*?)</script>', page, re.S)[1])
    shown = [dict(zip(block["fields"], row, strict=True)) for row in block["rows"]]
    assert Counter(s["finish_reason"] for s in shown) == Counter(r["finish_reason"] for r in rows)
    assert {s["refusal"] for s in shown if s["reason"] == "refusal"} == {REFUSAL}


def test_cached_answers_keep_finish_reason_refusal_and_served_model(tmp_path: Path) -> None:
    with FakeServer(plan=lambda p, a: "refusal" if default_answer(p) < "3" else "ok", served_model="snap-1") as s:
        assert main(argv(tmp_path, s, "first")) == 0
        assert main(argv(tmp_path, s, "second")) == 0
        assert len(s.calls) == 30
    first, _ = read(tmp_path / "first")
    second, metrics = read(tmp_path / "second")
    assert first == second and metrics["cache"]["hits"] == 30


def test_an_oversized_reply_is_cut_and_flagged_not_stored_whole(tmp_path: Path) -> None:
    with FakeServer(plan=lambda p, a: "huge" if default_answer(p) < "2" else "ok") as server:
        assert main(argv(tmp_path, server, "r")) == 0
    rows, _ = read(tmp_path / "r")
    huge = [r for r in rows if r["truncated"]]
    assert huge and all(len(r["output"].encode()) == REPLY_CAP_BYTES and r["parsed"] == 4.0 for r in huge)
    assert all(not r["truncated"] for r in rows if default_answer(r["prompt"]) >= "2")
    assert (tmp_path / "r" / "samples.jsonl").stat().st_size < len(huge) * HUGE_BYTES
    assert max(len(text) for text, _ in cached_rows(tmp_path)) == REPLY_CAP_BYTES


def test_a_reply_quoting_the_key_is_redacted_before_it_is_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FakeServer(plan=lambda p, a: "leak", api_key=KEY) as server:
        assert main(argv(tmp_path, server, "r")) == 0
    rows, _ = read(tmp_path / "r")
    assert all(r["output"] == "3.0 (your key is [redacted])" for r in rows)
    assert all(KEY.encode() not in p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())


# --- a 200 that holds no answer (issue 41): kept where it is JSON of another shape, an error where it reports one ---


def _first(n: int, action: str) -> tuple[set[str], Callable[[str, int], str]]:
    """A plan that gives `action` to the first `n` prompts the server sees, at every attempt; and those prompts."""
    hit: set[str] = set()

    def plan(prompt: str, attempt: int) -> str:
        if prompt in hit or len(hit) < n:
            hit.add(prompt)
            return action
        return "ok"

    return hit, plan


@pytest.mark.parametrize("action", ["200-list", "200-no-choices"])
def test_a_json_200_of_no_answers_shape_is_kept_as_malformed_and_never_bought_again(
    tmp_path: Path, action: str
) -> None:
    """docs/backends.md: a 200 whose body is JSON is never bought again. It was retried 3 times and never cached."""
    hit, plan = _first(4, action)
    with FakeServer(plan=plan) as server:
        assert main(argv(tmp_path, server, "r")) == 0
        first = Counter(server.received())
        assert main(argv(tmp_path, server, "again")) == 0
        assert len(server.calls) == sum(first.values()) == 30  # each asked once; the rerun asked for none
    assert all(first[p] == 1 for p in hit)
    rows, metrics = read(tmp_path / "r")
    assert (
        sorted((r["reason"], r["valid"], r["error"]) for r in rows if r["prompt"] in hit)
        == [("malformed", False, None)] * 4
    )
    assert metrics["reasons"].get("malformed") == 4 and metrics["errors"] == 0
    metas = [json.loads(meta) for _, meta in cached_rows(tmp_path)]
    shape = "no choices"  # both: a list has no choices either
    assert sum(f"unreadable: NotAnAnswer: {shape}" == m.get("malformed") for m in metas) == 4, metas[:2]


def test_a_gateways_error_in_a_200_is_the_error_it_names_and_is_retried_as_that_status(tmp_path: Path) -> None:
    """OpenRouter: once the model has started, an error comes with status 200 and its status in error.code. A 502
    there is a transient failure: retried, and the answer that follows kept. It was retried as `no choices`, and a
    server that kept sending it gave up after 3 tries whatever it said."""
    seen: Counter[str] = Counter()

    def plan(prompt: str, attempt: int) -> str:
        seen[prompt] += 1
        return "200-error-502" if attempt < 4 else "ok"  # more than MALFORMED_TRIES: only a status retry gets there

    with FakeServer(plan=plan) as server:
        assert main(argv(tmp_path, server, "r", "--concurrency", "8", "--max-retries", "5")) == 0
        assert main(argv(tmp_path, server, "again")) == 0
    assert set(seen.values()) == {5}  # four 502s and the answer; the rerun from the cache
    rows, metrics = read(tmp_path / "r")
    assert all(r["error"] is None and r["output"] == default_answer(r["prompt"]) for r in rows)
    assert metrics["dispatch"]["malformed"] == 0


@pytest.mark.parametrize(
    ("action", "calls", "error"),
    [
        ("200-error-400", 1, "bad_request: HTTP 400: Provider rejected the request (an error sent with status 200)"),
        ("200-error", 3, "gave up after 3 tries: malformed reply: Overloaded (an error sent with status 200)"),
    ],
)
def test_a_gateways_error_in_a_200_that_names_no_answer_is_that_requests_error_and_asked_again_on_rerun(
    tmp_path: Path, action: str, calls: int, error: str
) -> None:
    """No answer was made, so none is cached: a 4xx it names is not retried; one without a status is retried as an
    unreadable reply (3 tries). The rerun asks for those again, and only those."""
    hit, plan = _first(2, action)
    with FakeServer(plan=plan) as server:
        assert main(argv(tmp_path, server, "r")) == 3
        first = Counter(server.received())
        assert main(argv(tmp_path, server, "again")) == 3
        rerun = Counter(server.received()) - first
    assert {p: first[p] for p in hit} == {p: calls for p in hit} and sum(first.values()) == 28 + 2 * calls
    assert rerun == Counter({p: calls for p in hit})
    rows, _ = read(tmp_path / "r")
    failed = sorted(r["error"] for r in rows if r["error"])
    assert len(failed) == 2 and all(e.startswith(error) for e in failed), failed
