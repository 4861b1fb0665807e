"""A report section is one module and one entry in SECTIONS (docs/extending.md "A new report section"): a toy
section, tests/reporting/toy_section.py, gets its entry here and nowhere else, and is then shown in report.md and
index.html (with its link) and writes its file, for real runs of the offline baselines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.reporting.sections import SECTIONS, Section

# The one line a new section adds to harness/reporting/sections.py SECTIONS.
TOY = Section("tests.reporting.toy_section", "Toy: mean prediction")
# What docs/extending.md "A new report section" must name (tests/docs/test_extending.py checks it does).
DOCUMENTED = ("harness/reporting/<name>.py", "harness/reporting/sections.py")


def _expected(run: Path) -> list[str]:
    samples = [json.loads(x) for x in (run / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    mean = sum(s["prediction"] for s in samples) / len(samples)
    worst = max(samples, key=lambda s: (abs(s["prediction"] - s["label"]), s["id"]))
    return [f"{mean:.3f}", worst["id"]]


def test_a_new_section_is_shown(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(SECTIONS, "toy", TOY)
    argv = ["--dataset", "stsb", "--limit", "30", "--shots", "0", "--no-progress", "--results-dir", str(tmp_path)]
    for model in ("overlap", "random"):
        assert main([*argv, "--model", model, "--run-id", model]) == 0
    runs = [tmp_path / "overlap", tmp_path / "random"]
    assert main(["report", *map(str, runs), "--out", str(tmp_path / "report")]) == 0
    out = tmp_path / "report"
    md = (out / "report.md").read_text(encoding="utf-8")
    part = md[md.index("## Toy: mean prediction\n") :]
    for ref, run in (("R1", runs[0]), ("R2", runs[1])):
        row = next(x for x in part.splitlines() if x.startswith(f"| {ref} "))
        assert [c.strip() for c in row.strip("|").split("|")] == [ref, *_expected(run)]
    page = (out / "index.html").read_text(encoding="utf-8")
    assert (
        '<a href="#toy">Toy: mean prediction</a>' in page and '<section id="toy"><h2>Toy: mean prediction</h2>' in page
    )
    assert f"<td>{_expected(runs[0])[0]}</td>" in page
    assert (out / "toy.csv").read_text(encoding="utf-8").splitlines()[1] == ",".join(["R1", *_expected(runs[0])])


def test_a_section_with_nothing_to_show_is_left_out(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(SECTIONS, "toy", TOY)
    argv = ["--dataset", "stsb", "--limit", "5", "--model", "overlap", "--dry-run", "--results-dir", str(tmp_path)]
    assert main([*argv, "--run-id", "dry"]) == 0
    assert main(["report", str(tmp_path / "dry"), "--out", str(tmp_path / "report")]) == 0
    assert "Toy" not in (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    assert not (tmp_path / "report" / "toy.csv").exists()
