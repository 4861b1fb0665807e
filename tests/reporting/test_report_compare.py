"""compare: two runs on the same items, whatever else differs; one clear line when they are not."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.reporting.compare import compare_runs
from tests.synthetic_runs import make_run


def test_runs_that_differ_in_model_only_are_compared(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    results = tmp_path / "results"
    a = make_run(results, "a", model="gpt-4", n=60)
    b = make_run(results, "b", model="gpt-4o", n=60, offset=1.0, invalid_every=4)
    assert main(["compare", str(a), str(b), "--resamples", "200"]) == 0
    out = capsys.readouterr().out
    assert f"A: {a} (gpt-4)" in out and f"B: {b} (gpt-4o)" in out
    row = next(line for line in out.splitlines() if line.startswith("| all (fallback included) | spearman"))
    assert row.split("|")[3].strip() == "60"


def test_each_side_says_its_invalid_rate_and_a_near_constant_answer_is_marked(tmp_path: Path) -> None:
    # issue 42: Gemma-3-270M answered 0.0 to most STS-B items; compare showed its Spearman like any other, and
    # neither side's invalid rate
    results = tmp_path / "results"
    a = make_run(results, "a", n=40, outputs={i: "2.0" for i in range(30)})
    b = make_run(results, "b", n=40, offset=1.0, invalid_every=4)
    text = compare_runs(a, b, n_resamples=100)
    rows = [json.loads(line) for line in (a / "samples.jsonl").read_text().splitlines()]
    value, count = Counter(r["prediction"] for r in rows).most_common(1)[0]
    assert value == 2.0 and count >= 30
    assert (
        f"† A, all (fallback included): near-constant predictions: {count} of 40 ({100 * count / 40:.0f}%) are 2.0"
        in text
    )
    spearman = next(line for line in text.splitlines() if line.startswith("| all (fallback included) | spearman"))
    cells = [c.strip() for c in spearman.split("|")]
    assert cells[4].endswith(" †") and not cells[5].endswith("†")  # A marked, B (answers near the labels) not
    bad = sum(not json.loads(line)["valid"] for line in (b / "samples.jsonl").read_text().splitlines())
    assert bad == 10
    assert f"B: {b} (gpt-4), invalid 25.0% (10 of 40 replies scored by the fallback draw)" in text
    assert f"A: {a} (gpt-4), invalid 0.0% (0 of 40 replies scored by the fallback draw)" in text


def test_runs_with_failed_requests_are_compared_on_what_both_answered(tmp_path: Path) -> None:
    results = tmp_path / "results"
    text = compare_runs(make_run(results, "a", n=60, errors=5), make_run(results, "b", n=60), n_resamples=100)
    assert "note: A has 5 failed requests: compared on the items both answered" in text
    assert "| all (fallback included) | spearman | 55 |" in text


@pytest.mark.parametrize(
    ("b_kwargs", "message"),
    [
        ({"n": 30}, "error: runs are on different items: A has 40, B has 30, 30 shared"),
        ({"dataset": "stsb"}, "error: runs differ in dataset (csts vs stsb): not the same items"),
        ({"config": {"labels": "reannotated"}}, "error: runs are scored against different labels"),
        ({"dry_run": True}, "is a dry run, no answers: nothing to compare"),
    ],
)
def test_runs_on_different_items_are_refused_in_one_line(
    b_kwargs: dict, message: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    results = tmp_path / "results"
    a, b = make_run(results, "a", n=40), make_run(results, "b", **{"n": 40} | b_kwargs)
    assert main(["compare", str(a), str(b)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(captured.err.splitlines()) == 1 and message in captured.err


def test_same_ids_with_other_labels_are_not_the_same_items(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    results = tmp_path / "results"
    a, b = make_run(results, "a", n=20), make_run(results, "b", n=20)
    lines = (b / "samples.jsonl").read_text().splitlines()
    lines[3] = lines[3].replace('"label": 2.0', '"label": 5.0')
    (b / "samples.jsonl").write_text("\n".join(lines) + "\n")
    assert main(["compare", str(a), str(b)]) == 2
    assert "runs label 1 of their items differently (item 3 first)" in capsys.readouterr().err


def test_the_uncertainty_table_keeps_a_run_whose_answers_are_constant(tmp_path: Path) -> None:
    # issue 42: Gemma-3-270M parsed 1.0 for all 200 C-STS items; the Uncertainty table left its row out silently
    results = tmp_path / "results"
    a = make_run(results, "a", n=40, outputs={i: "1.0" for i in range(40)})
    b = make_run(results, "b", n=40)
    assert main(["report", str(a), str(b), "--out", str(tmp_path / "rep")]) == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    table = md[md.index("## Uncertainty") :].split("\n## ")[0]
    row = next(line for line in table.splitlines() if line.startswith("| R1 |"))
    cells = [c.strip() for c in row.split("|")]
    assert cells[9] == cells[10] == "– (constant predictions: all 40 parsed as 1.0)"
    assert any(line.startswith("| R2 |") for line in table.splitlines())
