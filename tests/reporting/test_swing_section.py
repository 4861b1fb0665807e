"""The format-swing section (harness/reporting/swing_section.py): runs that differ only in their template are set
side by side with max − min of their Spearman and the best and worst format; any other difference keeps them apart."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from harness.reporting.report import write_report
from tests.synthetic_runs import make_run


def test_the_swing_is_max_minus_min_over_formats_only(tmp_path: Path) -> None:
    results = tmp_path / "results"
    runs = [
        make_run(results, f"m-{instr}", "m", dataset="stsb", instr=instr, shots=2, invalid_every=every, n=120)
        for instr, every in (("none", 2), ("short", 0), ("long", 4))
    ]
    runs.append(make_run(results, "other-model", "m2", dataset="stsb", instr="long", shots=2, n=120))
    runs.append(make_run(results, "m-long-5", "m", dataset="stsb", instr="long", shots=2, n=120,
                         config={"max_tokens": 5}))  # fmt: skip
    out = write_report(runs, tmp_path / "report")
    spearman = pd.read_csv(out / "runs.csv").set_index("run")["spearman"]
    by = {i: spearman[f"m-{i}"] for i in ("none", "short", "long")}
    assert by["short"] > by["long"] > by["none"]  # the formats' invalid replies (fallback draws) made them differ
    report = (out / "report.md").read_text()
    section = report.split("## Format sensitivity")[1].split("\n## ")[0]
    (line,) = [x for x in section.splitlines() if x.startswith("| R")]
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[0] == "R1, R2, R3" and cells[2] == "m" and cells[3] == "2"
    assert cells[6] == f"{by['short'] - by['none']:.2f}"
    assert (cells[7], cells[8]) == ("short", "none")
    assert cells[5].startswith(f"short {by['short']:.2f} [")
    assert "| m2 |" not in section and "R5" not in section  # another model; another max_tokens
    assert "Format sensitivity" in (out / "index.html").read_text()


def test_no_section_without_two_formats_of_one_setting(tmp_path: Path) -> None:
    results = tmp_path / "results"
    runs = [make_run(results, f"m{k}", "m", dataset="stsb", instr="short", shots=k, n=60) for k in (0, 2)]
    assert "Format sensitivity" not in (write_report(runs, tmp_path / "report") / "report.md").read_text()
