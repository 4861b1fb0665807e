"""`report --shareable` leaves no C-STS text anywhere in its folder: real runs on synthetic C-STS data (an offline
baseline, and a model behind tests/fake_server.py whose replies and inline thoughts echo the whole prompt), then
every byte of every file the report wrote is searched for every sentence and condition of the data."""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli.main import main
from harness.reporting.shareable import LEFT_OUT, served_model, stop_reason
from tests.fake_server import FakeServer


def echo(prompt: str) -> str:
    """A reply that quotes the prompt twice: in an inline thought (kept as `reasoning`) and in the answer."""
    return f"<think>\nI read: {prompt}\n</think>\n\nYou asked: {prompt[-300:]} 3"


def texts(data: Path) -> set[str]:
    """Every sentence and condition of the synthetic C-STS files (the text the release terms keep private)."""
    found = set()
    for path in data.glob("csts_*.csv"):
        with path.open(newline="", encoding="utf-8") as f:
            for row in csv.DictReader(f):
                found |= {row["sentence1"], row["sentence2"], row["condition"]}
    return found


def leaks(folder: Path, private: set[str]) -> dict[str, list[str]]:
    out = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes()
        hits = sorted(t for t in private if t.encode() in data)
        if hits:
            out[str(path.relative_to(folder))] = hits
    return out


def test_a_shareable_report_holds_no_csts_sentence_or_condition(tmp_path: Path, csts_dir: Path) -> None:
    results = tmp_path / "results"
    common = ["--data-dir", str(csts_dir), "--shots", "2", "--instr", "long", "--limit", "8", "--no-progress"]
    common += ["--results-dir", str(results)]
    assert main(["--model", "overlap", "--run-id", "baseline", *common]) == 0
    with FakeServer(answer=echo) as server:
        assert main(["--model", "echo-model", "--base-url", server.openai_url, "--run-id", "echo", *common]) == 0
    runs = [str(results / "baseline"), str(results / "echo")]
    assert main(["report", *runs, "--out", str(tmp_path / "full")]) == 0
    assert main(["report", *runs, "--out", str(tmp_path / "shared"), "--shareable"]) == 0

    private = texts(csts_dir)
    full = leaks(tmp_path / "full", private)
    page = full.get("index.html", [])
    assert len(page) >= 10  # the ordinary page shows prompts, replies and thoughts: the search can find them
    assert leaks(tmp_path / "shared", private) == {}
    shared = (tmp_path / "shared" / "index.html").read_text(encoding="utf-8")
    assert "C-STS text left out" in shared and "I read:" not in shared  # the thought is gone too
    for name in ("table_csts-validation.md", "runs.csv"):  # the numbers are the same
        assert (tmp_path / "shared" / name).read_text() == (tmp_path / "full" / name).read_text()


def quoting_plan(prompt: str, attempt: int) -> str:
    """Every third prompt (by its hash) gets a 400 whose message quotes the whole prompt, as validation errors do."""
    return "400-quote" if int(hashlib.sha256(prompt.encode()).hexdigest(), 16) % 3 == 0 else "ok"


def echo_in_fields(endpoint: str, request: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
    """The prompt's end as the reply's `model`, its start as `finish_reason`: strings a server writes freely."""
    prompt = request["messages"][-1]["content"] if "messages" in request else request["prompt"]
    reply["model"] = prompt[-200:]
    reply["choices"][0]["finish_reason"] = prompt[:300]
    return reply


def test_server_strings_and_error_messages_that_quote_the_prompt_stay_out(
    tmp_path: Path, csts_dir: Path, capsys: pytest.CaptureFixture
) -> None:
    """A failed request's error message (a 400 quoting the prompt), and the `model` and `finish_reason` a server
    sent back, were kept verbatim in the shareable page; the run's warning line quoted the 400 too."""
    results = tmp_path / "results"
    common = ["--data-dir", str(csts_dir), "--shots", "2", "--instr", "long", "--limit", "12", "--no-progress"]
    with FakeServer(plan=quoting_plan, extras=echo_in_fields) as server:
        args = ["--model", "m", "--base-url", server.openai_url, "--results-dir", str(results), "--run-id", "q"]
        capsys.readouterr()
        assert main([*args, *common]) == 3  # some requests failed in a way a rerun repeats
        run_err = capsys.readouterr().err
        failed = [c for c in server.calls if c.action == "400-quote"]
    assert 0 < len(failed) < 12
    private = texts(csts_dir)
    rows = [json.loads(line) for line in (results / "q" / "samples.jsonl").read_text().splitlines()]
    errors = [r["error"] for r in rows if r["error"]]
    assert len(errors) == len(failed)  # kept in the run's own files, the prompt's quote taken out of the message
    assert all(e.startswith("bad_request: HTTP 400: Input should be a valid list: input_value='") for e in errors)
    assert all("[prompt text]" in e and not any(t in e for t in private) for e in errors)
    assert f"warning: {len(failed)} requests failed in a way a rerun repeats (bad_request: HTTP 400: Input" in run_err
    assert [t for t in private if t in run_err] == []

    assert main(["report", str(results / "q"), "--out", str(tmp_path / "full")]) == 0
    assert main(["report", str(results / "q"), "--out", str(tmp_path / "shared"), "--shareable"]) == 0
    assert leaks(tmp_path / "full", private)  # the ordinary page shows them: the search can find them
    assert leaks(tmp_path / "shared", private) == {}
    page = (tmp_path / "shared" / "index.html").read_text(encoding="utf-8")
    assert "bad_request: HTTP 400: [C-STS text left out: shareable report]" in page


def test_the_replies_of_repeated_samples_stay_out_and_their_scores_and_ids_stay(tmp_path: Path) -> None:
    """--repeats keeps each item's K replies in samples.jsonl (`repeats.outputs`): a shareable run drops them."""
    from harness.reporting.shareable import LEFT_OUT, without_csts_text
    from harness.results.read import load_run
    from tests.synthetic_runs import make_run

    run = load_run(make_run(tmp_path, "r", n=4))
    spread = {"values": [2.0, None], "valid": 1, "sd": None, "range": 0.0, "outputs": ["2, as A0 and B0 say", "no"]}
    run = dataclasses.replace(run, samples=tuple(dataclasses.replace(s, repeats=spread) for s in run.samples))
    shared = without_csts_text(run)
    assert [s.id for s in shared.samples] == ["0", "1", "2", "3"]
    assert {json.dumps(s.repeats) for s in shared.samples} == {json.dumps(spread | {"outputs": [LEFT_OUT, LEFT_OUT]})}


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("gpt-4o", True),
        ("gpt-4o-2024-08-06", True),  # the snapshot that answered
        ("openai/gpt-4o", True),
        ("gpt-4o:latest", False),  # a version starts with a digit
        ("a_man_is_playing_the_guitar", False),  # a sentence in a model id's characters (issue 41)
        ("gpt-4o-a_man_is_playing_the_guitar", False),
        ("the-dog/gpt-4o-2024", True),  # one owner segment before: the shape allows it, and it holds no sentence
        ("the dog ran/gpt-4o", False),
        ("xgpt-4o", False),
        (None, True),
    ],
)
def test_a_served_model_is_shown_only_as_the_run_s_model_with_a_version_or_an_owner(
    value: str | None, shown: bool
) -> None:
    assert served_model(value, ("gpt-4o", "")) == (value if shown else LEFT_OUT)


@pytest.mark.parametrize(
    ("value", "shown"),
    [("stop", True), ("length", True), ("end_turn", True), ("content_filter", True), (None, True),
     ("a_man_plays", False), ("Stop", False), ("stop ", False)],
)  # fmt: skip
def test_a_finish_reason_is_shown_only_when_it_is_a_known_stop_reason(value: str | None, shown: bool) -> None:
    assert stop_reason(value) == (value if shown else LEFT_OUT)
