"""report.md's protocols section: parsed, expected and constrained Spearman of one model side by side with CIs
and paired comparisons, checked against scipy; the constrained run's row labelled and never set against the paper."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from scipy.stats import spearmanr

from harness.cli.main import main
from tests.fake_protocols import logprobs
from tests.fake_server import FakeServer


def first_digit(text: str) -> dict[str, float]:
    d = int(next(c for c in text if c.isdigit()))
    return {str(d): 0.5, str((d + 2) % 6): 0.3, "The": 0.1}


def json_answer(endpoint: str, request: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
    """Honours response_format: {"score": N}, N one more than the fake's first digit (mod 6)."""
    reply = logprobs(first_digit)(endpoint, request, reply)
    if "response_format" in request:
        message = reply["choices"][0]["message"]
        message["content"] = json.dumps({"score": (int(message["content"][0]) + 1) % 6})
    return reply


def samples(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (folder / "samples.jsonl").read_text().splitlines()]


def test_report_sets_parsed_expected_and_constrained_side_by_side(tmp_path: Path) -> None:
    base = ["--model", "gpt-4o", "--dataset", "stsb", "--limit", "30", "--no-progress", "--results-dir", str(tmp_path)]
    with FakeServer(extras=json_answer) as server:
        base += ["--base-url", server.openai_url]
        assert main([*base, "--scoring", "expected", "--run-id", "a"]) == 0
        assert main([*base, "--constrain", "--run-id", "b"]) == 0
    assert main(["report", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "rep")]) == 0
    report = (tmp_path / "rep" / "report.md").read_text()
    section = report[report.index("## Protocols") :]
    a, b = samples(tmp_path / "a"), samples(tmp_path / "b")
    gold = [s["label"] for s in a]
    want = {
        "R1 parsed": spearmanr([s["prediction"] for s in a], gold)[0],
        "R1 expected": spearmanr([s["expected"] for s in a], gold)[0],
        "R2 constrained": spearmanr([s["prediction"] for s in b], gold)[0],
    }
    for name, rho in want.items():
        cells = r"\| 30 \| [^|]+ \| (-?[\d.]+) \| \[(-?[\d.]+), (-?[\d.]+)\]"
        row = re.search(rf"^\| {name} \| \w+ \| chat {cells}", section, re.M)
        assert row is not None, name
        assert float(row.group(1)) == round(100 * rho, 2)
        assert float(row.group(2)) <= float(row.group(1)) <= float(row.group(3))
    cells = r"\| 30 \| (-?[\d.]+) \| (-?[\d.]+) \| (-?[\d.]+) \|"
    pair = re.search(rf"^\| R1 parsed − R2 constrained {cells}", section, re.M)
    assert pair is not None
    assert abs(float(pair.group(3)) - 100 * (want["R1 parsed"] - want["R2 constrained"])) < 0.01
    assert "R1 expected − R2 constrained" in section and "R1 parsed − R1 expected" in section
    runs_csv = (tmp_path / "rep" / "runs.csv").read_text()
    assert "constrain=native" in runs_csv  # the constrained run's row label says so


def test_a_chat_run_beside_a_raw_run_is_labelled_and_the_mix_is_said(tmp_path: Path) -> None:
    base = ["--model", "my-model", "--dataset", "stsb", "--limit", "30", "--no-progress"]
    base += ["--results-dir", str(tmp_path)]
    with FakeServer(extras=logprobs(first_digit)) as server:
        base += ["--base-url", server.openai_url, "--scoring", "expected"]
        assert main([*base, "--run-id", "raw"]) == 0  # an OpenAI-compatible server's own model: raw text
        assert main([*base, "--chat", "--run-id", "chat"]) == 0
    assert main(["report", str(tmp_path / "raw"), str(tmp_path / "chat"), "--out", str(tmp_path / "rep")]) == 0
    report = (tmp_path / "rep" / "report.md").read_text()
    section = report[report.index("## Protocols") :]
    forms = dict(re.findall(r"^\| (R\d \w+) \| \w+ \| (\w+) \| 30 \|", section, re.M))
    assert forms == {"R1 parsed": "raw", "R1 expected": "raw", "R2 parsed": "chat", "R2 expected": "chat"}
    assert "These columns mix prompt forms (a `--chat` run beside raw-text runs)" in section


def test_a_constant_or_near_constant_column_is_marked_with_its_reason(tmp_path: Path) -> None:
    # issue 42: Gemma-3-270M's only score token among its top 20 was "1" for every item (expected 1.0 throughout):
    # the section showed "–" for its Spearman, no reason; its parsed answers were mostly one value, unmarked.
    base = [
        "--model",
        "my-model",
        "--dataset",
        "stsb",
        "--limit",
        "30",
        "--no-progress",
        "--results-dir",
        str(tmp_path),
    ]
    with FakeServer(extras=logprobs(lambda text: {"1": 0.02, "On": 0.9})) as server:
        base += ["--base-url", server.openai_url, "--scoring", "expected", "--chat"]
        assert main([*base, "--run-id", "a"]) == 0
    assert main(["report", str(tmp_path / "a"), "--out", str(tmp_path / "rep")]) == 0
    section = (tmp_path / "rep" / "report.md").read_text().split("## Protocols")[1]
    assert re.search(r"^\| R1 expected \| expected \| chat \| 30 \| [^|]+ \| – † \|", section, re.M)
    assert "\n\n- † R1 expected: constant predictions: all 30 equal to 1.0" in section
    # index.html shows the section too (it had only report.md's copy): the column, its mark and its reason
    page = (tmp_path / "rep" / "index.html").read_text()
    html = page[page.index('<section id="protocols"') :]
    html = html[: html.index("</section>")]
    assert "<td>R1 expected</td><td>expected</td><td>chat</td><td>30</td>" in html and "<td>– †</td>" in html
    assert "<li>† R1 expected: constant predictions: all 30 equal to 1.0</li>" in html
    rows = samples(tmp_path / "a")
    count = Counter(r["prediction"] for r in rows).most_common(1)[0][1]  # the fake's own replies: marked or not
    parsed = re.search(r"^\| R1 parsed \| parsed \| chat \| 30 \| [^|]+ \| (-?[\d.]+)( †)? \|", section, re.M)
    assert parsed is not None and bool(parsed.group(2)) == (2 * count > 30)
