"""`run_eval.py errors` end to end: a real qa run against tests/fake_server.py, then error identification on its
answers.jsonl (offline hash embeddings, and the OpenAI embeddings path against the same fake server)."""

from __future__ import annotations

import base64
import hashlib
import json
import math
import random
import struct
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.datasets.choose import load_dataset
from harness.results.manifest import check_folder
from harness.results.read import load_run
from harness.scoring.errors import rank_labels
from tests.fake_server import EMBEDDINGS, FakeServer
from tests.variants.test_qa_run import args, fake_answer


def _labels_file(csts_dir: Path, path: Path) -> Path:
    """Synthetic re-annotated labels for the synthetic validation split: some differ, one is invalid (-1)."""
    rows = load_dataset("csts", "validation", data_dir=csts_dir).examples
    rng = random.Random(0)
    lines = ["uid\treannotated-label"]
    for e in rows:
        label = -1 if e.id == "0" else (int(e.label) if rng.random() < 0.5 else rng.randint(1, 5))  # type: ignore[arg-type]
        lines.append(f"{e.id}\t{label}")
    path.write_text("\n".join(lines) + "\n")
    return path


def _brute_force(rows: list[dict]) -> tuple[float, float, float]:
    flagged = {r["uid"] for r in rows if r["rank_label"] != r["original"]}
    errors = {r["uid"] for r in rows if r["reannotated"] != r["original"]}
    p = len(flagged & errors) / len(flagged) if flagged else 0.0
    r = len(flagged & errors) / len(errors) if errors else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


@pytest.mark.parametrize("embedder", ["hash", "openai"])
def test_errors_from_a_qa_run(
    csts_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], embedder: str
) -> None:
    labels = _labels_file(csts_dir, tmp_path / "reannotated.tsv")
    with FakeServer(answer=fake_answer) as server:
        assert main(args(csts_dir, tmp_path, "qa", server, "--variant", "qa")) == 0
        run = tmp_path / "qa"
        argv = ["errors", str(run), "--data-dir", str(csts_dir), "--labels-file", str(labels), "--k-max", "6"]
        argv += ["--distribution", "even"]
        if embedder == "hash":
            argv += ["--embed-model", "hash"]
        else:
            argv += ["--embed-model", "text-embedding-3-small", "--base-url", server.openai_url]
        capsys.readouterr()
        assert main(argv) == 0
    if embedder == "openai":
        assert any(c.path == "/v1/embeddings" for c in server.calls)
    out = run / "errors-even"
    scores = json.loads((out / "scores.json").read_text())
    rows = [json.loads(line) for line in (out / "candidates.jsonl").read_text().splitlines()]
    n_rows = len(load_dataset("csts", "validation", data_dir=csts_dir).examples)
    assert scores["left_out"] == {"no answer": 0, "no re-annotated label": 1, "unusable embedding": 0}
    assert scores["instances"] == n_rows - 1 and len(rows) == (n_rows - 1) // 2  # the held-out half
    assert 1 <= scores["best_k"] <= 6 and scores["proportions"] == [0.2] * 5
    assert (scores["test"]["precision"], scores["test"]["recall"], scores["test"]["f1"]) == pytest.approx(
        _brute_force(rows)
    )
    # Within each cluster the rank labels are the even mapping of the cosines (ties by uid).
    for c in {r["cluster"] for r in rows}:
        members = [r for r in rows if r["cluster"] == c]
        expected = rank_labels([r["cosine"] for r in members], [0.2] * 5, [r["uid"] for r in members])
        assert [r["rank_label"] for r in members] == expected
    printed = capsys.readouterr().out
    assert f"best K (fitting half): {scores['best_k']}" in printed and f"results: {out}" in printed
    t, every = scores["test"], scores["all_flagged"]  # ×100 as the report shows them, beside the yardsticks
    assert (
        f"K={scores['best_k']}: P {100 * t['precision']:.1f}  R {100 * t['recall']:.1f}  F1 {100 * t['f1']:.1f}"
        in printed
    )
    errors = sum(r["error"] for r in rows)
    assert every["precision"] == pytest.approx(errors / len(rows)) and every["recall"] == 1.0
    assert f"every instance flagged: P {100 * every['precision']:.1f}  R 100.0  F1 {100 * every['f1']:.1f}" in printed
    assert "Tu et al. Table 2 (even, K=3): F1 74.5  Spearman 60.8" in printed
    best = scores["best_test_k"]
    assert f"best K on the held-out half itself: {best}, F1 {100 * scores['test_f1_by_k'][str(best)]:.1f}" in printed
    assert (scores["fit_instances"], scores["test_instances"]) == (n_rows - 1 - len(rows), len(rows))
    assert scores["candidates"] == sum(r["candidate"] for r in rows)
    assert scores["answers_sha256"] == hashlib.sha256((run / "answers.jsonl").read_bytes()).hexdigest()
    assert check_folder(out).status == "verified" and load_run(run).integrity.status == "verified"
    # Never the C-STS text: uids and numbers only.
    assert set(rows[0]) == {"uid", "cluster", "cosine", "rank_label", "original", "reannotated", "candidate", "error"}


def test_a_folder_without_answers_is_one_line(
    csts_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "run").mkdir()
    assert main(["errors", str(tmp_path / "run"), "--data-dir", str(csts_dir), "--embed-model", "hash"]) == 2
    assert "answers.jsonl not found" in capsys.readouterr().err


def test_the_documented_command_runs(csts_dir: Path, tmp_path: Path) -> None:
    readme = (Path(__file__).parents[2] / "docs" / "variants.md").read_text(encoding="utf-8")
    line = next(x for x in readme.splitlines() if x.startswith("python run_eval.py errors") and "hash" in x)
    labels = _labels_file(csts_dir, tmp_path / "reannotated.tsv")
    with FakeServer(answer=fake_answer) as server:
        assert main(args(csts_dir, tmp_path, "qa", server, "--variant", "qa")) == 0
    words = line.replace("results/<qa-run>", str(tmp_path / "qa")).replace("<csts-dir>", str(csts_dir)).split()
    assert main([*words[2:], "--labels-file", str(labels)]) == 0
    assert json.loads((tmp_path / "qa" / "errors-even" / "scores.json").read_text())["k_max"] == 6


def test_an_out_folder_holding_other_files_is_refused(
    csts_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The output folder is replaced whole on a rerun, so one holding anything else is never taken."""
    (tmp_path / "run").mkdir()
    keep = tmp_path / "keep"
    keep.mkdir()
    (keep / "notes.txt").write_text("mine", encoding="utf-8")
    argv = ["errors", str(tmp_path / "run"), "--data-dir", str(csts_dir), "--embed-model", "hash", "--out", str(keep)]
    assert main(argv) == 2
    assert "holds other files" in capsys.readouterr().err
    assert [p.name for p in keep.iterdir()] == ["notes.txt"]


def _nan_base64() -> str:
    return base64.b64encode(struct.pack("<4f", math.nan, 1.0, math.inf, 0.5)).decode()  # float32, as the SDK asks


BAD = {  # embedding replies a server may send: the SDK passes each on, and the cache keeps it
    0: [],  # empty
    1: [0.5, 0.25],  # another length than the rest's 32
    2: _nan_base64(),  # NaN and inf inside base64 float32
    3: [1e200] * 32,  # finite, but its squared length is not
}


def _bad_kind(text: str) -> int | None:
    h = int(hashlib.sha256(text.encode()).hexdigest(), 16)
    return h % 4 if h % 5 == 0 else None  # a fifth of the texts, each of the four kinds


def _corrupt(endpoint: str, request: dict, reply: dict) -> dict:
    if endpoint == EMBEDDINGS:
        texts = request["input"] if isinstance(request["input"], list) else [request["input"]]
        for item, text in zip(reply["data"], texts, strict=True):
            kind = _bad_kind(text)
            item["embedding"] = item["embedding"] if kind is None else BAD[kind]
    return reply


def test_unusable_embeddings_leave_their_rows_out_and_a_rerun_buys_none_again(
    csts_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Embeddings of another length, empty, NaN/inf or too large (issue 30): each row with one is left out and
    counted, the rest is scored; the cached replies are read the same way on the rerun, which requests nothing."""
    from harness.datasets.labels import load_reannotated
    from harness.variants.answers import read_answers
    from harness.variants.error_id import joined, pair_text

    labels = _labels_file(csts_dir, tmp_path / "reannotated.tsv")
    with FakeServer(answer=fake_answer, extras=_corrupt) as server:
        assert main(args(csts_dir, tmp_path, "qa", server, "--variant", "qa")) == 0
        run = tmp_path / "qa"
        argv = ["errors", str(run), "--data-dir", str(csts_dir), "--labels-file", str(labels), "--k-max", "4",
                "--embed-model", "text-embedding-3-small", "--base-url", server.openai_url]  # fmt: skip
        assert main([*argv, "--out", str(tmp_path / "first")]) == 0
        bought = sum(c.path == "/v1/embeddings" for c in server.calls)
        assert main([*argv, "--out", str(tmp_path / "again")]) == 0
        rebought = sum(c.path == "/v1/embeddings" for c in server.calls) - bought
    examples = load_dataset("csts", "validation", data_dir=csts_dir).examples
    rows, _ = joined(examples, read_answers(run / "answers.jsonl"), load_reannotated(labels))
    unusable = sum(any(_bad_kind(t) is not None for t in (a1, a2, pair_text(a1, a2))) for _, a1, a2, _ in rows)
    first = json.loads((tmp_path / "first" / "scores.json").read_text())
    again = json.loads((tmp_path / "again" / "scores.json").read_text())
    assert 0 < unusable < len(rows) and bought > 0 and rebought == 0
    assert first["left_out"] == {"no answer": 0, "no re-annotated label": 1, "unusable embedding": unusable}
    assert first["instances"] == len(rows) - unusable
    assert {k: v for k, v in again.items() if k != "run"} == {k: v for k, v in first.items() if k != "run"}
    assert "unusable embedding" in capsys.readouterr().out
