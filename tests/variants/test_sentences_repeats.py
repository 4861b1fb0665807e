"""--repeats K on the paper's variant, through the real OpenAI SDK to a local server whose replies vary from one asking
of a prompt to the next (as a sampling model's do): each repeat is a request of its own with the temperature asked
for, cached per repeat (a rerun sends nothing; one more repeat sends one request per item), a failed repeat fails
its item until a rerun asks that repeat alone, and a dry run prices K requests per item."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.reporting.paper_settings import run_settings
from harness.reporting.published import load_published, not_comparable
from harness.results.read import load_run
from tests.fake_server import FakeServer

REPLIES = ["2", "4", "I cannot rate this.", "5"]  # the first, second, ... asking of each prompt


class Sampler:
    """Each prompt's n-th reply is REPLIES[n]: what K samples of one item would look like."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}

    def __call__(self, prompt: str) -> str:
        n = self.seen.get(prompt, 0)
        self.seen[prompt] = n + 1
        return REPLIES[n % len(REPLIES)]


def _samples(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]


def test_repeats_are_asked_cached_and_reduced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r"
    common = ["--dataset", "stsb", "--model", "m", "--limit", "6", "--temperature", "0.7", "--no-progress"]
    common += ["--results-dir", str(out), "--concurrency", "1"]  # one at a time: the n-th asking is repeat n
    with FakeServer(answer=Sampler()) as server:
        url = ["--base-url", server.openai_url]
        capsys.readouterr()
        assert main([*common, *url, "--repeats", "3", "--run-id", "k3"]) == 0
        assert (
            "repeats: K=3 (mean of the valid replies, temperature 0.7): 18 replies, invalid 33.3% per reply, 0.0% per "
            "item; per item sd 1.414, range 2.000 on average, 100.0% of items' replies disagree"
        ) in capsys.readouterr().out
        assert len(server.calls) == 18
        assert {c.body["temperature"] for c in server.calls} == {0.7}
        assert main([*common, *url, "--repeats", "3", "--run-id", "again"]) == 0
        assert len(server.calls) == 18  # every repeat came from the cache
        assert main([*common, *url, "--repeats", "4", "--reduce", "median", "--run-id", "k4"]) == 0
        assert len(server.calls) == 24  # one more repeat: one request per item
    k3, k4 = _samples(out / "k3"), _samples(out / "k4")
    assert [s["repeats"]["values"] for s in k3] == [[2.0, 4.0, None]] * 6
    assert all((s["prediction"], s["valid"], s["repeats"]["range"]) == (3.0, True, 2.0) for s in k3)
    assert _samples(out / "again") == k3
    assert [s["repeats"]["values"] for s in k4] == [[2.0, 4.0, None, 5.0]] * 6
    assert {s["prediction"] for s in k4} == {4.0}  # the median of 2, 4, 5
    metrics = json.loads((out / "k3" / "metrics.json").read_text())
    assert metrics["invalid_pct"] == 0.0  # per item: each had a number
    assert metrics["repeats"]["invalid_replies_pct"] == 100 / 3  # per reply: one of three
    assert (metrics["repeats"]["k"], metrics["repeats"]["reduce"], metrics["repeats"]["temperature"]) == (
        3,
        "mean",
        0.7,
    )
    config = json.loads((out / "k3" / "config.json").read_text())
    # In the identity: what differs from the defaults (config/keys.py); the reducer at its default is in `settings`
    assert (config["repeats"], config["temperature"], config["settings"]["reduce"]) == (3, 0.7, "mean")
    assert "reduce" not in config and json.loads((out / "k4" / "config.json").read_text())["reduce"] == "median"
    row = next(p for p in load_published() if p.source.endswith("Table 12") and p.shots == 0 and p.instr == "none")
    verdict = not_comparable(row, 1500, 0, run_settings(load_run(out / "k3"), None)) or ""
    assert "temperature=0.7 (paper: 0.0)" in verdict and "repeats=3 (paper: 1)" in verdict
    assert main(["report", str(out / "k3"), str(out / "k4"), "--out", str(tmp_path / "report")]) == 0
    report = (tmp_path / "report" / "report.md").read_text()
    section = report.split("## Repeated samples")[1].split("\n## ")[0]
    k3_line, k4_line = [line for line in section.splitlines() if line.startswith("| R")]
    # K, reduce, temperature, replies, invalid % per reply and per item, mean sd, mean range, items disagreeing %
    assert (
        "| 3 | mean | 0.70 | 18 | 33.33 | 0.00 | 1.414 | 2.000 | 100.00 | 0: 2, 4, –; 1: 2, 4, –; 2: 2, 4, – |"
        in k3_line
    )
    assert "| 4 | median | 0.70 | 24 | 25.00 | 0.00 | 1.528 | 3.000 |" in k4_line


def test_a_failed_repeat_fails_its_item_until_a_rerun_asks_it_alone(tmp_path: Path) -> None:
    out = tmp_path / "r"
    failing = {"on": True}

    def plan(prompt: str, attempt: int) -> str:
        return "400" if failing["on"] and attempt == 1 else "ok"  # each prompt's second asking fails for good

    common = ["--dataset", "stsb", "--model", "m", "--limit", "4", "--repeats", "3", "--temperature", "1"]
    common += ["--no-progress", "--results-dir", str(out), "--concurrency", "1", "--max-retries", "0"]
    with FakeServer(answer=Sampler(), plan=plan) as server:
        url = ["--base-url", server.openai_url]
        assert main([*common, *url, "--run-id", "first"]) == 3  # failed requests: a rerun may fix them
        failed = _samples(out / "first")
        assert all(s["prediction"] is None and s["error"] and s["reason"] == "error" for s in failed)
        failing["on"] = False
        sent = len(server.calls)
        assert main([*common, *url, "--run-id", "rerun"]) == 0
        assert len(server.calls) - sent == 4  # only the failed repeat of each item
    assert all(s["error"] is None and s["repeats"]["valid"] >= 2 for s in _samples(out / "rerun"))


def test_a_dry_run_prices_k_requests_per_item(tmp_path: Path) -> None:
    common = ["--dataset", "stsb", "--model", "gpt-4o", "--limit", "10", "--dry-run", "--no-progress"]
    common += ["--results-dir", str(tmp_path)]
    assert main([*common, "--run-id", "one"]) == 0
    assert main([*common, "--repeats", "5", "--run-id", "five"]) == 0
    one, five = (json.loads((tmp_path / r / "metrics.json").read_text()) for r in ("one", "five"))
    assert (one["requests"], five["requests"]) == (10, 50)
    assert five["prompt_tokens"] == 5 * one["prompt_tokens"]
    assert five["max_cost_usd"] > 4.9 * one["max_cost_usd"]
    assert len(_samples(tmp_path / "five")) == 10  # the prompts once per item
