"""reannotate reads a reply copied from the prompt's own examples as an echo (invalid), as runs read a number
copied from their prompt, and never replaces an existing --out unasked (issue 34)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.prompting.render import PromptRenderer
from harness.scoring.reannotation import read_condition, read_rating
from harness.types import Example
from harness.variants.reannotate import (
    CONDITION_TEMPLATE,
    RATING_TEMPLATE,
    SHOTS_FILE,
    Settings,
    condition_requests,
    rating_requests,
    shot_views,
)
from tests.fake_server import FakeServer

Q = Example("7", "A cat sleeps on a red sofa.", "A dog sleeps on a blue sofa.", "color of sofa", 3.0)
SHOTS = json.loads(SHOTS_FILE.read_text())["shots"]
COPIES = [json.dumps({"rating": s["rating"], "justification": s["justification"]}) for s in SHOTS]


def rating_prompt() -> str:
    (repeat,) = rating_requests([Q], {}, shot_views(), PromptRenderer(RATING_TEMPLATE), Settings(), 160)
    return repeat[0].prompt


@pytest.mark.parametrize("copy", COPIES)
def test_a_rating_copied_from_the_prompts_examples_is_an_echo(copy: str) -> None:
    prompt = rating_prompt()
    assert copy in prompt  # the example's reply, as the prompt shows it
    assert read_rating(copy, None, prompt).status == "echo"


def test_echo_status_value_and_what_is_still_read() -> None:
    prompt, copy = rating_prompt(), COPIES[3]
    echoed = read_rating(copy, None, prompt)
    assert (echoed.value, echoed.status, echoed.valid) == (None, "echo", False)
    assert read_rating(f"Here it is: {copy}", None, prompt).status == "echo"  # inside other text too
    own = json.dumps({"rating": SHOTS[3]["rating"], "justification": "Both name the sofa's colour."})
    assert (read_rating(own, None, prompt).value, read_rating(own, None, prompt).status) == (SHOTS[3]["rating"], "json")
    assert read_rating(copy, None, None).status == "json"  # without the prompt nothing is compared
    (cond,) = condition_requests([Q], PromptRenderer(CONDITION_TEMPLATE), 160)
    assert read_condition('{"improved_condition": "colour of the sofa"}', None, cond.prompt).status == "json"


def argv(csts_dir: Path, tmp_path: Path, server: FakeServer, *extra: str) -> list[str]:
    return [
        "reannotate", "--backend", "openai", "--model", "annotator", "--base-url", server.openai_url,
        "--data-dir", str(csts_dir), "--results-dir", str(tmp_path / "results"), "--no-progress",
        "--out", str(tmp_path / "labels.tsv"), "--limit", "4", *extra,
    ]  # fmt: skip


def test_a_model_that_copies_an_example_gets_no_label(
    csts_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeServer(answer=lambda prompt: COPIES[0]) as server:
        assert main(argv(csts_dir, tmp_path, server)) == 0
    record = json.loads((tmp_path / "labels.agreement.json").read_text())
    assert (record["ratings"]["echo"], record["ratings"]["json"], record["ratings"]["invalid_pct"]) == (4, 0, 100.0)
    labels = [line.split("\t")[1] for line in (tmp_path / "labels.tsv").read_text().splitlines()[1:]]
    assert labels == ["-1"] * 4
    assert "echo 4" in capsys.readouterr().out


def test_an_existing_out_is_not_replaced_unasked(
    csts_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "labels.tsv"
    out.write_text("hours of paid labels\n")
    with FakeServer() as server:
        assert main(argv(csts_dir, tmp_path, server)) == 2
        assert main(argv(csts_dir, tmp_path, server, "--dry-run")) == 2
        assert server.calls == []
    assert capsys.readouterr().err == (
        f"error: --out: {out} already exists: pass another --out, or --overwrite to replace it\n" * 2
    )
    assert out.read_text() == "hours of paid labels\n" and not (tmp_path / "results").exists()
    with FakeServer(answer=lambda prompt: '{"rating": 3, "justification": "x"}') as server:
        assert main(argv(csts_dir, tmp_path, server, "--overwrite")) == 0
    assert out.read_text().splitlines()[1].split("\t")[1] == "3"
