"""compare: two runs on the same items, whatever else differs; one clear line when they are not."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import scipy.stats as sps

from harness.cli.main import main
from harness.reporting.compare import compare_runs, told_apart
from harness.results.manifest import write_manifest
from tests.fake_server import FakeServer, default_answer
from tests.scoring.test_stats_reference import _brute_force_paired, _williams_from_the_matrix
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


def _fake_run(server: FakeServer, results: Path, run_id: str, *more: str) -> Path:
    args = ["--model", "m", "--base-url", server.openai_url, "--dataset", "stsb", "--limit", "20", *more]
    assert main([*args, "--results-dir", str(results), "--run-id", run_id, "--no-progress"]) == 0
    return results / run_id


def test_each_side_is_named_by_the_settings_its_run_recorded_differently(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    # issue 42: Gemma-3-270M's chat and raw runs were both "(gemma-3-270m)": which was which, compare did not say
    results = tmp_path / "results"
    with FakeServer() as server:
        chat = _fake_run(server, results, "chat", "--chat")
        raw = _fake_run(server, results, "raw")  # the layout left to the harness (raw at a --base-url server)
        raw_k2 = _fake_run(server, results, "raw-k2", "--shots", "2", "--parse", "strict")
    capsys.readouterr()
    lines = compare_runs(chat, raw, n_resamples=50).splitlines()
    assert lines[0].startswith(f"A: {chat} (m · chat), invalid 0.0%")
    assert lines[1].startswith(f"B: {raw} (m · raw), invalid 0.0%")
    with FakeServer() as other:  # the same settings against another server: its address is what differs
        there = _fake_run(other, results, "there")
    lines = compare_runs(raw, there, n_resamples=50).splitlines()
    assert lines[0].startswith(f'A: {raw} (m · api.base_urls=["{server.openai_url}"]), invalid')
    assert lines[1].startswith(f'B: {there} (m · api.base_urls=["{other.openai_url}"]), invalid')
    lines = compare_runs(raw, raw_k2, n_resamples=50).splitlines()
    assert lines[0].startswith(f"A: {raw} (m · shots=0 · parse=first-number), invalid")
    assert lines[1].startswith(f"B: {raw_k2} (m · shots=2 · parse=strict), invalid")


def test_each_side_says_its_reply_reasons_and_a_reason_other_than_number_that_dominates(tmp_path: Path) -> None:
    # issue 42: Gemma-3-270M answered 0 % invalid, every reply an echo of the scale; compare showed 0 % and no more
    results = tmp_path / "results"
    with FakeServer(answer=lambda prompt: "Sentence 1: " + prompt[-40:]) as server:
        a = _fake_run(server, results, "echo")
        server.answer = default_answer
        b = _fake_run(server, results, "number", "--no-cache")
    text = compare_runs(a, b, n_resamples=50)
    reasons_a = Counter(json.loads(line)["reason"] for line in (a / "samples.jsonl").read_text().splitlines())
    assert reasons_a == {"echo": 20}
    assert f"A: {a} (m), invalid 0.0% (0 of 20 replies scored by the fallback draw); reasons: echo 20" in text
    assert f"B: {b} (m), invalid 0.0% (0 of 20 replies scored by the fallback draw); reasons: number 20" in text
    assert (
        "warning: A: 20 of 20 replies (100%) are `echo`, not a number given as the answer (the number read is the "
        "prompt's own, the scale or a sentence's label, repeated): its scores say little of what the model judged"
    ) in text
    assert "warning: B" not in text


def _with_expected(run: Path, expected: np.ndarray) -> None:
    """Give a made-up run's answered samples expected scores (as --scoring expected records them)."""
    records = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
    for rec, value in zip(records, expected, strict=True):
        rec["expected"], rec["expected_mass"] = float(value), 0.9
    (run / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    write_manifest(run)


def test_expected_scores_are_compared_with_the_same_paired_tests(tmp_path: Path) -> None:
    # issue 42: both runs scored with --scoring expected, and compare compared only the parsed scores
    results = tmp_path / "results"
    a = make_run(results, "a", n=40, manifest=False)
    b = make_run(results, "b", n=40, offset=1.0, invalid_every=4, manifest=False)
    gold = np.array([json.loads(line)["label"] for line in (a / "samples.jsonl").read_text().splitlines()])
    rng = np.random.default_rng(3)
    ea, eb = gold + rng.normal(0, 0.8, 40), gold + rng.normal(0, 1.6, 40)
    _with_expected(a, ea)
    _with_expected(b, eb)
    text = compare_runs(a, b, n_resamples=150, seed=4)
    assert "| valid in both | spearman | 30 |" in text  # B's every 4th reply has no number: 10 of 40
    rows = {
        m: next(x for x in text.splitlines() if x.startswith(f"| expected score | {m} |"))
        for m in ("spearman", "pearson")
    }
    pairs = [str(i - i % 2) for i in range(40)]  # C-STS: both conditions of a sentence pair resampled together
    clusters = np.unique(pairs, return_inverse=True)[1]
    for metric, corr in (("spearman", sps.spearmanr), ("pearson", sps.pearsonr)):
        cells = [c.strip() for c in rows[metric].split("|")[1:-1]]
        ra, rb, rab = corr(ea, gold)[0], corr(eb, gold)[0], corr(ea, eb)[0]
        assert cells[2:6] == ["40", f"{100 * ra:.2f}", f"{100 * rb:.2f}", f"{100 * (ra - rb):.2f}"]
        lo, hi, p, _ = _brute_force_paired(ea, eb, gold, clusters, 150, 4, metric)
        assert cells[6] == f"[{lo:.2f}, {hi:.2f}]" and cells[7] in (f"{p:.4f}", f"≤ {p:.4f}")
        williams = 2 * sps.t.sf(abs(_williams_from_the_matrix(ra, rb, rab, 40)), 37)
        assert float(cells[8]) == pytest.approx(williams, rel=1e-3)
    assert "Expected score: the probability-weighted score of the reply's first token" in text


def test_expected_scores_of_one_side_only_are_said_not_compared(tmp_path: Path) -> None:
    results = tmp_path / "results"
    a = make_run(results, "a", n=20, manifest=False)
    _with_expected(a, np.linspace(1, 5, 20))
    text = compare_runs(a, make_run(results, "b", n=20), n_resamples=50)
    assert "note: only A has expected scores (--scoring expected): they are not compared" in text
    assert "| expected score |" not in text


def test_a_constant_expected_score_is_marked_in_its_row(tmp_path: Path) -> None:
    # Gemma-3-270M's first token gave the score tokens 2 % of its probability, all on "1": expected 1.0 throughout
    results = tmp_path / "results"
    a, b = make_run(results, "a", n=20, manifest=False), make_run(results, "b", n=20, manifest=False)
    _with_expected(a, np.full(20, 1.0))
    _with_expected(b, np.linspace(1, 5, 20))
    text = compare_runs(a, b, n_resamples=50)
    row = next(x for x in text.splitlines() if x.startswith("| expected score | spearman |"))
    labels = [json.loads(x)["label"] for x in (b / "samples.jsonl").read_text().splitlines()]
    b_spearman = 100 * sps.spearmanr(np.linspace(1, 5, 20), labels)[0]
    assert [c.strip() for c in row.split("|")[4:6]] == ["– †", f"{b_spearman:.2f}"]  # A undefined, B as scipy has it
    assert "† A, expected score: constant predictions: all 20 equal to 1.0" in text


def test_a_long_setting_is_shown_whole_up_to_120_characters() -> None:
    def config(instr: str) -> dict:
        return {"model": "m", "settings": {"model": "m", "instr": instr}}

    whole, cut = "x" * 120, "y" * 121  # a value of 120 characters is shown whole, a longer one cut to 120
    assert told_apart(config(whole), config("short")) == ([f"instr={whole}"], ["instr=short"])
    assert told_apart(config(cut), config("short"))[0] == [f"instr={'y' * 117}..."]
    assert told_apart(config("short"), config("short")) == ([], [])
