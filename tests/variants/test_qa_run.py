"""The QA variants end to end: the real OpenAI SDK against tests/fake_server.py on 127.0.0.1."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.datasets.choose import load_dataset
from harness.variants.answers import AnswerKey, question_for
from tests.fake_server import FakeServer, bag_of_words

ANSWER_PREFIX = "Your task is to answer a question based on the information provided from the given sentence."
SCORE_PREFIX = "On a scale between 1 and 5, how similar are the following two answers"


def fake_answer(prompt: str) -> str:
    """Figure 7 prompts get a short phrase drawn from the sentence; Figure 9 prompts a score."""
    if prompt.startswith(ANSWER_PREFIX):
        sentence = prompt.split("Sentence: ", 1)[1].split("\n", 1)[0]
        return " " + " ".join(sentence.split()[:2]) + "\n"  # stray whitespace: the harness cleans it
    return f"{1 + int(hashlib.sha256(prompt.encode()).hexdigest(), 16) % 5}"


def args(csts_dir: Path, results: Path, run_id: str, server: FakeServer, *extra: str) -> list[str]:
    return [
        "--backend", "openai", "--model", "scorer", "--answer-model", "answerer", "--data-dir", str(csts_dir),
        "--results-dir", str(results), "--run-id", run_id, "--base-url", server.openai_url, "--no-progress", *extra,
    ]  # fmt: skip


def _answer_calls(server: FakeServer) -> list[str]:
    return [c.prompt for c in server.calls if c.prompt.startswith(ANSWER_PREFIX)]


def _expected_keys(csts_dir: Path, limit: int) -> set[AnswerKey]:
    rows = load_dataset("csts", "validation", data_dir=csts_dir).examples[:limit]
    return {AnswerKey(s, e.condition) for e in rows for s in (e.sentence1, e.sentence2)}


def test_answers_are_requested_once_per_unique_sentence_and_condition(csts_dir: Path, tmp_path: Path) -> None:
    with FakeServer(answer=fake_answer) as server:
        assert main(args(csts_dir, tmp_path, "qa", server, "--variant", "qa", "--limit", "10")) == 0
    asked = _answer_calls(server)
    assert len(asked) == len(set(asked)) == len(_expected_keys(csts_dir, 10))
    models = {c.body["model"] for c in server.calls if c.prompt.startswith(ANSWER_PREFIX)}
    assert models == {"answerer"}
    records = [json.loads(line) for line in (tmp_path / "qa" / "answers.jsonl").read_text().splitlines()]
    assert {AnswerKey(r["sentence"], r["condition"]) for r in records} == _expected_keys(csts_dir, 10)
    assert all(r["question"] == question_for(r["condition"]) and r["error"] is None for r in records)
    assert all(r["answer"] == r["answer"].strip() and r["answer"] for r in records)


def test_server_receives_figure_7_and_figure_9_verbatim(csts_dir: Path, tmp_path: Path) -> None:
    with FakeServer(answer=fake_answer) as server:
        assert main(args(csts_dir, tmp_path, "qa", server, "--variant", "qa", "--limit", "1")) == 0
    q = load_dataset("csts", "validation", data_dir=csts_dir).examples[0]
    received = set(server.received())
    for sentence in (q.sentence1, q.sentence2):
        assert (
            f"{ANSWER_PREFIX} You should summarize your answer into a word or a phrase that is clear and concise.\n\n"
            f"Sentence: {sentence}\nQuestion: {question_for(q.condition)}\n\nAnswer:"
        ) in received
    a1, a2 = (" ".join(s.split()[:2]) for s in (q.sentence1, q.sentence2))
    figure_9 = (
        f"{SCORE_PREFIX} with respect to the condition provided? Respond only with a score between 1 and 5.\n\n"
        f"Input:\nAnswer 1: {a1}\nAnswer 2: {a2}\nCondition: {q.condition}\n\nOutput:"
    )
    assert figure_9 in received
    sample = json.loads((tmp_path / "qa" / "samples.jsonl").read_text())
    assert sample["prompt"] == figure_9 and sample["parsed"] == float(fake_answer(figure_9))


def test_rerun_takes_answers_from_the_cache(csts_dir: Path, tmp_path: Path) -> None:
    with FakeServer(answer=fake_answer) as server:
        assert main(args(csts_dir, tmp_path, "a", server, "--variant", "qa", "--limit", "6")) == 0
        first = len(server.calls)
        assert main(args(csts_dir, tmp_path, "b", server, "--variant", "qa", "--limit", "6")) == 0
        assert len(server.calls) == first
    metrics = json.loads((tmp_path / "b" / "metrics.json").read_text())
    assert metrics["answers"]["cache"]["hits"] == metrics["answers"]["unique"] > 0
    assert (tmp_path / "a" / "samples.jsonl").read_text() == (tmp_path / "b" / "samples.jsonl").read_text()


def test_answers_file_is_reused_without_asking_again(csts_dir: Path, tmp_path: Path) -> None:
    with FakeServer(answer=fake_answer) as server:
        assert main(args(csts_dir, tmp_path, "a", server, "--variant", "qa", "--limit", "6")) == 0
    answers = tmp_path / "a" / "answers.jsonl"
    with FakeServer(answer=fake_answer) as server:
        extra = ("--variant", "qa", "--limit", "6", "--answers", str(answers), "--no-cache")
        assert main(args(csts_dir, tmp_path, "b", server, *extra)) == 0
    assert _answer_calls(server) == [] and len(server.calls) == 6
    assert (tmp_path / "a" / "samples.jsonl").read_text() == (tmp_path / "b" / "samples.jsonl").read_text()


def test_failed_answers_are_errors_not_invalid_outputs(csts_dir: Path, tmp_path: Path) -> None:
    q = load_dataset("csts", "validation", data_dir=csts_dir).examples[0]
    bad = f"Sentence: {q.sentence1}\n"

    def plan(prompt: str, attempt: int) -> str:
        return "500" if bad in prompt else "ok"

    with FakeServer(answer=fake_answer, plan=plan) as server:
        extra = ("--variant", "qa", "--limit", "4", "--max-retries", "0")
        assert main(args(csts_dir, tmp_path, "qa", server, *extra)) == 3  # written, but incomplete
    samples = [json.loads(line) for line in (tmp_path / "qa" / "samples.jsonl").read_text().splitlines()]
    failed = [s for s in samples if s["error"]]
    assert failed and all("no answer to" in s["error"] and s["prediction"] is None for s in failed)
    metrics = json.loads((tmp_path / "qa" / "metrics.json").read_text())
    assert metrics["errors"] == len(failed) and metrics["answers"]["failed"] >= 1


def test_qa_embed_scores_by_cosine_with_no_invalid_outputs(csts_dir: Path, tmp_path: Path) -> None:
    with FakeServer(answer=fake_answer) as server:
        extra = ("--variant", "qa-embed", "--model", "text-embedding-3-small", "--limit", "8")
        assert main(args(csts_dir, tmp_path, "e", server, *extra)) == 0
    embedded = [c for c in server.calls if c.path == "/v1/embeddings"]
    assert len(embedded) == len({c.prompt for c in embedded})  # one request per distinct answer
    samples = [json.loads(line) for line in (tmp_path / "e" / "samples.jsonl").read_text().splitlines()]
    for s in samples:
        a1, a2 = s["prompt"].split("\n")
        v1, v2 = bag_of_words(a1), bag_of_words(a2)
        dot = sum(x * y for x, y in zip(v1, v2, strict=True))
        norm = sum(x * x for x in v1) ** 0.5 * sum(y * y for y in v2) ** 0.5
        assert s["prediction"] == pytest.approx(dot / norm) and s["valid"]
    metrics = json.loads((tmp_path / "e" / "metrics.json").read_text())
    assert metrics["invalid_pct"] == 0.0 and metrics["out_of_range_pct"] == 0.0
    assert "mse" not in metrics  # cosines are not on the 1-5 label scale
    assert metrics["reasons"] == {"number": 8}
    config = json.loads((tmp_path / "e" / "config.json").read_text())
    assert config["variant"] == "qa-embed" and config["answer_model"] == "answerer"


def test_dry_run_counts_answers_and_scoring_prompts(
    csts_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--model", "gpt-4o", "--variant", "qa", "--data-dir", str(csts_dir), "--dry-run", "--limit", "5"]
    assert main([*argv, "--results-dir", str(tmp_path), "--run-id", "d"]) == 0
    metrics = json.loads((tmp_path / "d" / "metrics.json").read_text())
    assert metrics["answers"]["requests"] == len(_expected_keys(csts_dir, 5))
    assert metrics["scoring"]["requests"] == 5
    assert metrics["requests"] == metrics["answers"]["requests"] + 5
    samples = [json.loads(line) for line in (tmp_path / "d" / "samples.jsonl").read_text().splitlines()]
    assert all("Answer 1: <answer>" in s["prompt"] for s in samples)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--variant", "qa", "--dataset", "stsb"], "use --dataset csts"),
        (["--answers", "x.jsonl"], "belong to --variant qa or qa-embed"),
        (["--variant", "qa", "--answer-model", "overlap"], "is an offline baseline"),
        (["--variant", "qa-embed", "--model", "overlap", "--answer-model", "gpt-4o"], "needs an embedding model"),
    ],
)
def test_misused_options_fail_in_one_line(
    extra: list[str], message: str, csts_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    argv = ["--model", "gpt-4o", "--data-dir", str(csts_dir), "--results-dir", str(tmp_path / "r"), *extra]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
    assert not (tmp_path / "r").exists()
