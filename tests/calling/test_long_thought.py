"""A thought longer than the reply cap (base.py REPLY_CAP_BYTES) keeps the answer after it (issue 30): the cut used to
keep the first megabyte only, so the answer after a long inline thought was lost and the reply scored as a thought
that never closed. Real runs: the OpenAI SDK against tests/fake_server.py, whose model thinks for 1.2 MB."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.calling.backends.base import REPLY_CAP_BYTES, clean_reply
from harness.cli.main import main
from harness.scoring.reasoning import parse_tags, split_reply
from tests.fake_server import FakeServer

THOUGHT = "Sentence one says 2 dogs, sentence two says 7. " * 25_000  # 1.2 MB, numbers all through it


@pytest.mark.parametrize(
    ("tags", "open_", "close"),
    [("auto", "<think>", "</think>"), ("<<mull>> <</mull>>", "<<mull>>", "<</mull>>")],  # a known format, a custom one
)
def test_the_answer_after_a_thought_longer_than_the_cap_is_scored(
    tmp_path: Path, tags: str, open_: str, close: str
) -> None:
    def answer(prompt: str) -> str:
        return f"{open_}\n{THOUGHT}\n{close}\n\n4"

    with FakeServer(answer=answer) as server:
        args = ["--model", "thinker", "--backend", "openai", "--base-url", server.openai_url, "--dataset", "stsb"]
        args += ["--limit", "3", "--think-tags", tags, "--results-dir", str(tmp_path), "--run-id", "r", "--no-progress"]
        assert main(args) == 0
    rows = [json.loads(line) for line in (tmp_path / "r" / "samples.jsonl").read_text().splitlines()]
    assert [(r["output"], r["parsed"], r["reason"], r["truncated"]) for r in rows] == [("4", 4.0, "number", True)] * 3
    assert all(r["reasoning"].startswith("Sentence one says 2 dogs") for r in rows)


def test_the_cut_keeps_the_beginning_and_the_end_within_the_cap() -> None:
    text = f"<think>\n{THOUGHT}\n</think>\n\n4 because both mention dogs"
    stored, cut = clean_reply(text, None)
    assert cut and len(stored.encode()) == REPLY_CAP_BYTES
    assert stored.startswith("<think>\nSentence one") and stored.endswith("</think>\n\n4 because both mention dogs")
    assert split_reply(stored, None, parse_tags("auto")).answer == "4 because both mention dogs"
    plain = "4.0 " + "x" * 2_000_000  # no thought: the first number is at the beginning, which is kept
    stored, cut = clean_reply(plain, None)
    assert cut and stored.startswith("4.0 xxx") and len(stored.encode()) == REPLY_CAP_BYTES
