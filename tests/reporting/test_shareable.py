"""`report --shareable` leaves no C-STS text anywhere in its folder: real runs on synthetic C-STS data (an offline
baseline, and a model behind tests/fake_server.py whose replies and inline thoughts echo the whole prompt), then
every byte of every file the report wrote is searched for every sentence and condition of the data."""

from __future__ import annotations

import csv
from pathlib import Path

from harness.cli.main import main
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
