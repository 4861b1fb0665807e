"""The report's annotation-error identification section (harness/reporting/error_id.py): an errors output inside a
run folder is shown with its numbers, the paper's Table 2 beside them, and flagged where the setup differs."""

from __future__ import annotations

import csv
import hashlib
import html
import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli.main import main
from harness.results.manifest import write_manifest
from harness.results.read import load_run
from tests.synthetic_runs import make_run

ANSWERS = "".join(json.dumps({"sentence": f"s{i}", "condition": "c", "answer": f"a{i}"}) + "\n" for i in range(4))
# The paper's setup (Tu et al. 2024, §4): ada-002 embeddings of GPT-3.5's answers, 2,620 instances, K in 1-20.
PAPERS_SETUP: dict[str, Any] = {"embed_model": "text-embedding-ada-002", "instances": 2620, "k_max": 20}


def _qa_run(tmp_path: Path, answer_model: str = "gpt-3.5-turbo") -> Path:
    """A synthetic qa run folder with an answers.jsonl listed in its manifest, as the runner writes it."""
    config = {"variant": "qa", "answer_model": answer_model, "template": "csts/qa.j2"}
    run = make_run(tmp_path / "results", "qa-run", model=answer_model, config=config, manifest=False)
    (run / "answers.jsonl").write_text(ANSWERS, encoding="utf-8")
    write_manifest(run)
    return run


def _errors_output(run: Path, name: str = "errors-reannotated", **changes: Any) -> dict[str, Any]:
    """An errors output folder as `run_eval.py errors` writes it (scores.json, candidates.jsonl, manifest.json)."""
    rows = [{"uid": str(i), "candidate": i % 3 == 0} for i in range(1310)]
    scores: dict[str, Any] = (
        {
            "kind": "error-identification",
            "answers_sha256": hashlib.sha256(ANSWERS.encode()).hexdigest(),
            "labels_file": None,
            "distribution": "reannotated",
            "proportions": [0.1, 0.15, 0.25, 0.3, 0.2],
            "left_out": {"no answer": 0, "no re-annotated label": 214},
            "fit_instances": 1310,
            "test_instances": 1310,
            "candidates": 437,
            "best_k": 7,
            "test": {"precision": 0.8125, "recall": 0.75, "f1": 0.78},
            "no_cluster": {"precision": 0.7, "recall": 0.6, "f1": 0.6461538},
        }
        | PAPERS_SETUP
        | changes
    )
    folder = run / name
    folder.mkdir()
    (folder / "candidates.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (folder / "scores.json").write_text(json.dumps(scores), encoding="utf-8")
    write_manifest(folder)
    return scores


def _report(paths: list[Path], out: Path) -> tuple[str, str, list[dict[str, str]]]:
    assert main(["report", *map(str, paths), "--out", str(out)]) == 0
    md = (out / "report.md").read_text(encoding="utf-8")
    page = html.unescape((out / "index.html").read_text(encoding="utf-8"))
    with open(out / "error_identification.csv", encoding="utf-8") as f:
        return md, page, list(csv.DictReader(f))


def _section(md: str) -> str:
    start = md.index("## Annotation-error identification")
    return md[start : md.index("\n## ", start + 1)]


def test_the_section_shows_the_scores_beside_table_2(tmp_path: Path) -> None:
    run = _qa_run(tmp_path)
    _errors_output(run)
    md, page, rows = _report([run], tmp_path / "report")
    part = _section(md)
    line = next(x for x in part.splitlines() if x.startswith("| R1 "))
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells == [
        "R1", "gpt-3.5-turbo", "reannotated (10, 15, 25, 30, 20)", "text-embedding-ada-002", "1310 / 1310",
        "437 of 1310", "7 (of 1–20)", "81.2", "75.0", "78.0", "64.6", "82.4 (K = 10)", "79.4",
        "comparable, up to the halves", "`errors-reannotated`",
    ]  # fmt: skip
    assert "Their halves are unpublished" in part
    # The page: the same row in its own section, linked from the navigation.
    assert '<a href="#errors">' in page and '<section id="errors">' in page
    assert "<td>81.2</td><td>75.0</td><td>78.0</td><td>64.6</td><td>82.4 (K = 10)</td><td>79.4</td>" in page
    assert rows[0]["f1"] == "0.78" and rows[0]["paper_f1_x100"] == "82.4" and rows[0]["best_k"] == "7"
    assert rows[0]["not_comparable"] == "" and rows[0]["integrity"] == "verified"
    assert load_run(run).integrity.status == "verified"  # a folder added inside the run does not alter it


def test_even_distribution_is_set_beside_its_own_row_of_table_2(tmp_path: Path) -> None:
    run = _qa_run(tmp_path)
    _errors_output(run, "errors-even", distribution="even", proportions=[0.2] * 5, best_k=3)
    md, _, _ = _report([run], tmp_path / "report")
    assert "| 74.5 (K = 3) | 74.3 |" in _section(md)


@pytest.mark.parametrize(
    ("changes", "answer_model", "reason"),
    [
        ({"embed_model": "text-embedding-3-small"}, "gpt-3.5-turbo", "embedded with text-embedding-3-small, not"),
        ({}, "gpt-4o", "answers by gpt-4o, not GPT-3.5"),
        ({"instances": 120}, "gpt-3.5-turbo", "120 instances, not the 2,620 validly re-annotated"),
        ({"k_max": 6}, "gpt-3.5-turbo", "K searched in 1–6, not 1–20"),
        ({"labels_file": "mine.tsv"}, "gpt-3.5-turbo", "scored against another re-annotation than Tu et al.'s"),
        ({"answers_sha256": "0" * 64}, "gpt-3.5-turbo", "computed from other answers than the run folder's"),
    ],
)
def test_another_setup_is_flagged_not_comparable(
    tmp_path: Path, changes: dict[str, Any], answer_model: str, reason: str
) -> None:
    run = _qa_run(tmp_path, answer_model)
    _errors_output(run, **changes)
    md, page, rows = _report([run], tmp_path / "report")
    assert f"not comparable: {reason}" in _section(md)
    assert '<span class="nc">not comparable: ' in page and reason in rows[0]["not_comparable"]


def test_an_edited_errors_output_is_flagged(tmp_path: Path) -> None:
    run = _qa_run(tmp_path)
    _errors_output(run)
    scores = run / "errors-reannotated" / "scores.json"
    scores.write_text(scores.read_text().replace('"f1": 0.78', '"f1": 0.99'), encoding="utf-8")
    md, _, rows = _report([run], tmp_path / "report")
    part = _section(md)
    assert "not comparable: altered since it was written (errors-reannotated/scores.json changed" in part
    assert "| 99.0 |" in part and rows[0]["integrity"] == "altered"


def test_no_errors_output_no_section(tmp_path: Path) -> None:
    run = _qa_run(tmp_path)
    (run / "notes").mkdir()
    (run / "notes" / "scores.json").write_text('{"kind": "something else"}', encoding="utf-8")
    assert main(["report", str(run), "--out", str(tmp_path / "report")]) == 0
    assert "Annotation-error identification" not in (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    assert '<section id="errors">' not in (tmp_path / "report" / "index.html").read_text(encoding="utf-8")
    assert not (tmp_path / "report" / "error_identification.csv").exists()


def test_the_documented_commands_show_the_section(
    csts_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/reports.md's three lines, against a local server (answers and ada-002 embeddings) on synthetic C-STS:
    the section's numbers are the scores `errors` wrote, its F1 the candidates' own, its flags this setup's."""
    from tests.fake_server import FakeServer
    from tests.variants.test_error_id_run import _brute_force, _labels_file
    from tests.variants.test_qa_run import fake_answer

    page = (Path(__file__).parents[2] / "docs" / "reports.md").read_text(encoding="utf-8")
    block = page[page.index("## Annotation-error identification") :]
    block = block[block.index("```bash\n") + 8 : block.index("```\n", block.index("```bash"))]
    qa, errors, report = (line.split("#")[0].split()[2:] for line in block.splitlines())
    labels = _labels_file(csts_dir, tmp_path / "reannotated.tsv")
    monkeypatch.chdir(tmp_path)
    with FakeServer(answer=fake_answer) as server:
        local = ["--base-url", server.openai_url, "--data-dir", str(csts_dir)]
        assert main([*qa, *local, "--no-progress"]) == 0
        assert main([*errors, *local, "--labels-file", str(labels)]) == 0
    assert any(c.path == "/v1/embeddings" for c in server.calls)
    assert main(report) == 0
    out = tmp_path / "results" / "errors-report"
    scores = json.loads((tmp_path / "results" / "tu-qa" / "errors-reannotated" / "scores.json").read_text())
    candidates = (tmp_path / "results" / "tu-qa" / "errors-reannotated" / "candidates.jsonl").read_text()
    part = _section((out / "report.md").read_text(encoding="utf-8"))
    cells = [c.strip() for c in next(x for x in part.splitlines() if x.startswith("| R")).strip("|").split("|")]
    test, n_test = scores["test"], scores["test_instances"]
    assert cells[1:4] == ["gpt-3.5-turbo", cells[2], "text-embedding-ada-002"] and cells[2].startswith("reannotated (")
    assert cells[4:7] == [f"{scores['fit_instances']} / {n_test}", f"{scores['candidates']} of {n_test}",
                          f"{scores['best_k']} (of 1–20)"]  # fmt: skip
    assert cells[7:11] == [f"{100 * test[k]:.1f}" for k in ("precision", "recall", "f1")] + [
        f"{100 * scores['no_cluster']['f1']:.1f}"
    ]
    rows = [json.loads(line) for line in candidates.splitlines()]
    assert float(cells[9]) == pytest.approx(100 * _brute_force(rows)[2], abs=0.05)
    assert scores["candidates"] == sum(r["candidate"] for r in rows) and n_test == len(rows)
    assert cells[11:13] == ["82.4 (K = 10)", "79.4"]
    assert "not comparable: answers from http://127.0.0.1" in cells[13]
    assert f"{scores['instances']} instances, not the 2,620" in cells[13] and "--labels-file" in cells[13]
    assert "embedded with" not in cells[13]  # ada-002, as Tu et al.
