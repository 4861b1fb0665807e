"""No table cell ever holds two runs: every setting that changes prompts or answers keys a row (or a table)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from harness.reporting.report import write_report
from tests.synthetic_runs import make_run

# (what differs, config.json entries of the second run): the list, plus one setting outside it.
DIFFERENCES: list[tuple[str, dict[str, Any], str | None]] = [
    ("backend", {"backend": "hf"}, "backend=hf"),
    ("chat", {"chat": False}, "raw"),
    ("template", {"template": "csts/t5-long.j2"}, "template=t5-long"),
    ("scoring", {"scoring": "expected"}, "scoring=expected"),
    ("parse mode", {"parse": "strict"}, "parse=strict"),
    ("max tokens", {"max_tokens": 5}, "max_tokens=5"),
    ("stop", {"stop": ["\n"]}, "stop="),
    ("shot sampler", {"shot_sampler": "reference"}, "shot_sampler=reference"),
    ("seed", {"seed": 1}, "seed=1"),
    ("limit", {"limit": 40}, "limit=40"),
    ("variant", {"variant": "qa"}, None),  # a table of its own
    ("labels", {"labels": "reannotated"}, None),
    ("subset", {"subset": "reannotated-test"}, None),
    ("dtype (outside the list)", {"backend_params": {"api": "chat.completions", "dtype": "bfloat16"}}, "dtype"),
    # issue 41: settings marked READING that a run recorded only in `settings` (before they entered the identity)
    ("think tags, in settings", {"settings": {"think_tags": "none"}}, "think_tags=none"),
    ("reply cap, in settings", {"settings": {"api": {"max_reply_mb": 1.0}}}, "api.max_reply_mb=1.0"),
    # issue 41: a user's own template saved under a bundled template's name
    ("own template", {"template": "long.j2", "template_hashes": {"long.j2": "0" * 64}}, "template=long (own file)"),
]


def _cells(out: Path) -> list[float]:
    """Every Spearman value the layout tables show, over all tables."""
    values: list[float] = []
    for f in sorted(out.glob("table_*.csv")):
        t = pd.read_csv(f)
        values += [v for c in t.columns if c.endswith("_spearman") and "published" not in c for v in t[c].dropna()]
    return values


@pytest.mark.parametrize(("what", "config", "tag"), DIFFERENCES, ids=[d[0] for d in DIFFERENCES])
def test_two_runs_that_differ_in_one_setting_keep_a_cell_each(
    what: str, config: dict[str, Any], tag: str | None, tmp_path: Path
) -> None:
    results = tmp_path / "results"
    a = make_run(results, "a", offset=0.0)
    b = make_run(results, "b", offset=1.0, invalid_every=4, config=config)
    out = write_report([a, b], tmp_path / "report")
    runs = pd.read_csv(out / "runs.csv")
    assert len(runs) == 2 and runs["spearman"].nunique() == 2
    assert sorted(_cells(out)) == pytest.approx(
        sorted(runs["spearman"]), abs=1e-3
    )  # both shown, neither merged nor lost
    if tag is not None:
        (table,) = out.glob("table_*.md")
        assert tag in table.read_text()
        assert runs["row"].nunique() == 2


def test_hf_raw_and_hf_chat_are_two_rows(tmp_path: Path) -> None:
    """The defect as found: hf raw and hf chat runs of one model, instruction and k, one of them hidden."""
    results = tmp_path / "results"
    hf = {"backend": "hf", "backend_params": {"engine": "transformers", "chat_template": False}}
    raw = make_run(results, "raw", model="m", config=hf)
    chat = make_run(results, "chat", model="m", offset=2.0, config=hf | {"backend_params": {"chat_template": True}})
    out = write_report([raw, chat], tmp_path / "report")
    table = pd.read_csv(out / "table_csts-validation.csv").set_index("model")
    runs = pd.read_csv(out / "runs.csv").set_index("run")
    assert table.loc["m · raw", "k4_spearman"] == pytest.approx(runs.loc["raw", "spearman"], abs=1e-3)
    assert table.loc["m · chat", "k4_spearman"] == pytest.approx(runs.loc["chat", "spearman"], abs=1e-3)


def test_runs_of_one_identical_setting_are_both_shown_and_named(tmp_path: Path) -> None:
    results = tmp_path / "results"
    a = make_run(results, "first", offset=0.0)
    b = make_run(results, "again", offset=1.0)  # the same command run twice
    out = write_report([a, b], tmp_path / "report")
    table = pd.read_csv(out / "table_csts-validation.csv")
    assert list(table["model"]) == ["gpt-4 · R1", "gpt-4 · R2"]
    assert "R1, R2 are the same setting (gpt-4, k=4)" in (out / "report.md").read_text()


def test_a_setting_only_tags_the_model_and_instruction_it_varies_for(tmp_path: Path) -> None:
    results = tmp_path / "results"
    dirs = [
        make_run(results, "g-full", n=40),
        make_run(results, "g-nine", n=9, config={"limit": 9}),
        make_run(results, "g-k2", shots=2, n=40),
        make_run(results, "other", model="gpt-3.5-turbo", n=40, config={"backend": "anthropic"}),
    ]
    out = write_report(dirs, tmp_path / "report")
    table = pd.read_csv(out / "table_csts-validation.csv")
    # The full runs at k=2 and k=4 share a row; the 9-item run has its own; the other model needs no tag.
    assert list(table["model"]) == ["gpt-4 · limit=all", "gpt-4 · limit=9", "gpt-3.5-turbo"]
    assert list(table["k2_n"].fillna(-1)) == [40, -1, -1] and list(table["k4_n"]) == [40, 9, 40]
