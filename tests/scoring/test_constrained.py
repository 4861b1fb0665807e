"""--constrain: the reply shapes it accepts, what each API backend sends for it (real SDKs against
tests/fake_server.py), what a run records and how a report labels it, and the one-line refusals."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli.main import main
from harness.scoring.constrained import gbnf, parse_constrained, response_format, scale_values
from tests.fake_protocols import tool_call
from tests.fake_server import FakeServer


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ('{"score": 4}', 4.0),
        (' {"score":2.5}\n', 2.5),
        ("3", 3.0),
        (" 0\n", 0.0),
        ("7", 7.0),  # a number off the scale is read (and flagged out-of-range by its reason), not dropped
        ("3.5", None),  # no choice over the integers gives this: a server that ignored the constraint
        ('{"score": 4, "why": "same topic"}', None),  # another shape than the schema's
        ('{"score": "4"}', None),
        ('{"score": true}', None),
        ('{"score": NaN}', None),
        ('{"rating": 4}', None),
        ("[4]", None),
        ("The similarity is 4.", None),  # the paper's rule would read 4: the constraint was not held
        ("4 out of 5", None),
        ("", None),
        (None, None),
        # issue 30: what no float holds, or the json module cannot nest, is no score (and never an exception)
        ("9" * 400, None),  # float() makes it inf
        ('{"score": ' + "9" * 400 + "}", None),  # an int of 400 digits: float() raises OverflowError
        ('{"score": ' + "9" * 5000 + "}", None),  # over Python's 4,300-digit limit: json raises ValueError
        ("[" * 1200, None),  # RecursionError inside json
        ('{"score": ' + "[" * 1200 + "4" + "]" * 1200 + "}", None),
        ("{" * 300_000, None),
    ],
)
def test_constrained_replies_are_a_json_score_or_a_bare_number(text: str | None, want: float | None) -> None:
    assert parse_constrained(text) == want


def test_the_scale_is_the_integers_of_the_label_range() -> None:
    assert scale_values((1.0, 5.0)) == (1, 2, 3, 4, 5)
    assert scale_values((0.0, 5.0)) == (0, 1, 2, 3, 4, 5)
    fmt = response_format((1, 2, 3))
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    schema = fmt["json_schema"]["schema"]
    assert schema["properties"]["score"] == {"type": "integer", "enum": [1, 2, 3]}
    assert schema["required"] == ["score"] and schema["additionalProperties"] is False  # strict mode's rules


def json_answer(endpoint: str, request: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
    """A server that honours response_format: the fake's number as {"score": N}, N its first digit."""
    if "response_format" not in request:
        return reply
    choice = reply["choices"][0]
    field = "message" if "message" in choice else None
    text = choice["message"]["content"] if field else choice["text"]
    answer = json.dumps({"score": int(text[0])})
    if field:
        choice["message"]["content"] = answer
    else:
        choice["text"] = answer
    return reply


def run(url: str, tmp: Path, *extra: str, run_id: str = "r") -> tuple[dict[str, Any], list[dict[str, Any]], dict]:
    args = ["--base-url", url, "--dataset", "stsb", "--limit", "10", "--no-progress", "--constrain", *extra]
    assert main([*args, "--results-dir", str(tmp), "--run-id", run_id]) == 0
    folder = tmp / run_id
    samples = [json.loads(x) for x in (folder / "samples.jsonl").read_text().splitlines()]
    return json.loads((folder / "metrics.json").read_text()), samples, json.loads((folder / "config.json").read_text())


@pytest.mark.parametrize("mode", ["--chat", "--no-chat"])
def test_openai_sends_the_scales_json_schema_and_reads_the_json_answer(mode: str, tmp_path: Path) -> None:
    with FakeServer(extras=json_answer) as server:
        metrics, samples, config = run(server.openai_url, tmp_path, "--model", "m", mode)
    body = server.calls[0].body
    assert body["response_format"] == response_format((0, 1, 2, 3, 4, 5))
    assert metrics["invalid_pct"] == 0.0 and all(s["output"].startswith('{"score": ') for s in samples)
    assert all(s["parsed"] == float(json.loads(s["output"])["score"]) for s in samples)
    assert config["constrain"] == "native" and config["settings"]["constrain"] == "native"
    assert config["backend_params"]["sent"]["response_format"] == body["response_format"]  # in the cache key


def grammar_answer(endpoint: str, request: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
    """A llama.cpp server given a GBNF grammar over integers: the fake's first digit alone."""
    if "grammar" in request:
        choice = reply["choices"][0]
        if "message" in choice:
            choice["message"]["content"] = choice["message"]["content"][0]
        else:
            choice["text"] = choice["text"][0]
    return reply


@pytest.mark.parametrize("mode", ["--chat", "--no-chat"])
def test_constrain_grammar_sends_llama_cpps_gbnf_field(mode: str, tmp_path: Path) -> None:
    with FakeServer(extras=grammar_answer) as server:
        metrics, samples, config = run(server.openai_url, tmp_path, "--model", "m", mode, "--constrain", "grammar")
    body = server.calls[0].body
    assert body["grammar"] == 'root ::= "0" | "1" | "2" | "3" | "4" | "5"' == gbnf((0, 1, 2, 3, 4, 5))
    assert "response_format" not in body and config["constrain"] == "grammar"
    assert metrics["invalid_pct"] == 0.0 and all(s["output"] == s["output"][0] for s in samples)


HOSTILE = ["9" * 400, '{"score": ' + "9" * 400 + "}", "[" * 1200, '{"score": ' + "[" * 1200, "{" * 300_000]


def hostile_answer(endpoint: str, request: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
    """A server whose constrained replies are, for one prompt in two, one of HOSTILE (by the prompt's hash)."""
    prompt = request["messages"][0]["content"] if "messages" in request else request["prompt"]
    h = int(hashlib.sha256(prompt.encode()).hexdigest(), 16)
    choice = reply["choices"][0]
    answer = HOSTILE[h // 2 % len(HOSTILE)] if h % 2 else json.dumps({"score": h % 6})
    if "message" in choice:
        choice["message"]["content"] = answer
    else:
        choice["text"] = answer
    return reply


def test_hostile_replies_are_invalid_with_a_reason_and_the_rerun_buys_none(tmp_path: Path) -> None:
    """Issue 30: a 400-digit integer or `[` nested 1,200 deep crashed the run, and every rerun (the reply cached)."""
    with FakeServer(extras=hostile_answer) as server:
        metrics, samples, _ = run(server.openai_url, tmp_path, "--model", "m", "--chat", "--limit", "40")
        bought = len(server.answered)
        again, rerun, _ = run(server.openai_url, tmp_path, "--model", "m", "--chat", "--limit", "40", run_id="b")
    assert bought == 40 and len(server.answered) == bought  # the rerun re-requested 0 answers
    hostile = [s for s in samples if not s["output"].startswith('{"score": ') or len(s["output"]) > 20]
    assert 0 < len(hostile) < 40 and all(not s["valid"] and s["prediction"] is not None for s in hostile)
    # out-of-range: a bare 400-digit number (the paper's rule reads it; no float holds it)
    assert {s["reason"] for s in hostile} <= {"off-format", "no-number", "out-of-range"}
    assert all(s["valid"] and s["parsed"] == json.loads(s["output"])["score"] for s in samples if s not in hostile)
    assert metrics["invalid_pct"] == pytest.approx(100 * len(hostile) / 40)
    assert [(s["parsed"], s["reason"]) for s in rerun] == [(s["parsed"], s["reason"]) for s in samples]
    assert again["invalid_pct"] == metrics["invalid_pct"]


def test_a_server_that_ignores_the_constraint_shows_in_the_invalid_rate(tmp_path: Path) -> None:
    """The plain fake answers "3.4" whatever response_format says: a number, but in no constrained shape."""
    with FakeServer() as server:
        metrics, samples, _ = run(server.openai_url, tmp_path, "--model", "m")
    assert metrics["invalid_pct"] == 100.0 and all(s["reason"] == "off-format" and not s["valid"] for s in samples)


def test_anthropic_forces_a_tool_call_and_reads_its_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    with FakeServer(extras=tool_call(lambda text: {"score": int(text[0])})) as server:
        metrics, samples, _ = run(server.anthropic_url, tmp_path, "--model", "claude-haiku-4-5")
    body = server.calls[0].body
    (tool,) = body["tools"]
    assert body["tool_choice"] == {"type": "tool", "name": tool["name"]}
    assert tool["input_schema"]["properties"]["score"] == {"type": "integer", "enum": [0, 1, 2, 3, 4, 5]}
    assert metrics["invalid_pct"] == 0.0
    assert all(json.loads(s["output"]) == {"score": int(s["parsed"])} for s in samples)
    assert {s["finish_reason"] for s in samples} == {"tool_use"}


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--model", "overlap"], "--constrain: the offline backend cannot force its answer into the label scale"),
        (["--model", "gpt-4o", "--scoring", "expected"], "--constrain with --scoring expected"),
        (["--model", "gpt-4o", "--variant", "qa", "--dataset", "csts"], "use --variant sentences"),
        (["--model", "gpt-4o", "--constrain", "grammar"], "--constrain grammar sends llama.cpp's GBNF `grammar` field"),
        (["--model", "claude-haiku-4-5", "--constrain", "grammar"], "it needs --base-url, a llama.cpp server"),
    ],
)
def test_constrain_is_refused_in_one_line_where_it_cannot_be_honoured(
    args: list[str], said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    rc = main(["--dataset", "stsb", "--constrain", *args, "--dry-run", "--results-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and said in err
    assert list(tmp_path.iterdir()) == []
