"""reporting/rowkeys.py on values made here: the words of each setting, and the row labels that keep every run in
a cell of its own (test_report_rows.py checks the same through whole reports)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from harness.reporting.rowkeys import label_rows, show, text
from harness.results.read import Run


@pytest.mark.parametrize(
    ("key", "value", "words", "tag"),
    [
        ("chat", None, "n/a", "n/a"),
        ("chat", True, "chat", "chat"),
        ("chat", False, "raw", "raw"),
        ("reasoning", True, "reasoning", "reasoning"),
        ("reasoning", False, "no reasoning", "no reasoning"),
        ("limit", None, "all", "limit=all"),
        ("limit", 40, "40", "limit=40"),
        ("seed", None, "none", "seed=none"),
        ("stop", ["\n"], '["\\n"]', 'stop=["\\n"]'),
        ("template", "x" * 24, "x" * 24, "template=" + "x" * 24),
        ("template", "x" * 25, "x" * 21 + "...", "template=" + "x" * 21 + "..."),
        ("api.max_reply_mb", 1.0, "1.0", "api.max_reply_mb=1.0"),
    ],
)
def test_text_and_show(key: str, value: Any, words: str, tag: str) -> None:
    assert (text(key, value), show(key, value)) == (words, tag)


def run(name: str, **config: Any) -> Run:
    record = {"model": "m", "seed": 0, "template": "csts/long.j2", "label_range": [1, 5], "settings": {}} | config
    return Run(Path(f"/r/{name}"), record, (), {}, ())


def table(runs: list[Run], **columns: list[Any]) -> pd.DataFrame:
    n = len(runs)
    base = {
        "dataset": ["csts"] * n,
        "split": ["validation"] * n,
        "variant": ["sentences"] * n,
        "labels": ["original"] * n,
        "model": [r.config["model"] for r in runs],
        "instr": ["long"] * n,
        "shots": [0] * n,
        "dry_run": [False] * n,
        "ref": [f"R{i + 1}" for i in range(n)],
    }
    return pd.DataFrame(base | columns)


def test_an_identity_setting_tags_only_the_rows_it_varies_in() -> None:
    runs = [run("a"), run("b", seed=1), run("c", model="other")]
    labels, notes = label_rows(table(runs), runs)
    assert labels == ["m · seed=0", "m · seed=1", "other"] and notes == []


def test_a_setting_recorded_only_in_settings_tags_its_row() -> None:
    """Issue 41: runs told apart only by a marked setting in `settings` (a READING one written before it entered
    the identity) were called the same setting."""
    runs = [run("a", settings={"think_tags": "none"}), run("b")]
    labels, notes = label_rows(table(runs), runs)
    assert labels == ["m · think_tags=none", "m · think_tags=auto"] and notes == []
    nested = [run("a", settings={"api": {"max_reply_mb": 2.0, "timeout": 1.0}}), run("b")]
    labels, _ = label_rows(table(nested), nested)
    assert labels == ["m · api.max_reply_mb=2.0", "m · api.max_reply_mb=32.0"]  # timeout: OPERATION, no tag


def test_runs_of_one_setting_are_named_by_their_ref_with_a_note() -> None:
    runs = [run("a", created="t1", settings={"api": {"timeout": 3.0}}), run("b", created="t2")]
    labels, notes = label_rows(table(runs), runs)
    assert labels == ["m · R1", "m · R2"]
    assert notes == ["R1, R2 are the same setting (m, k=0): each is shown in a row of its own"]


def test_dry_runs_and_other_cells_are_left_alone() -> None:
    runs = [run("a"), run("b"), run("c", seed=2)]
    t = table(runs, dry_run=[False, True, False], shots=[0, 0, 2])
    labels, notes = label_rows(t, runs)
    assert labels == ["m · seed=0", "m", "m · seed=2"] and notes == []


def test_a_top_level_entry_outside_the_identity_tags_and_machine_entries_do_not() -> None:
    runs = [
        run("a", backend_params={"dtype": "bfloat16"}, git={"commit": "x"}),
        run("b", backend_params={"dtype": "float32"}, git={"commit": "y"}),
    ]
    labels, notes = label_rows(table(runs), runs)
    assert labels == ["m · backend_params.dtype=bfloat16", "m · backend_params.dtype=float32"] and notes == []


def test_the_note_names_the_shared_setting_with_its_tags() -> None:
    runs = [run("a"), run("b", created="t2"), run("c", seed=1)]
    labels, notes = label_rows(table(runs), runs)
    assert labels == ["m · seed=0 · R1", "m · seed=0 · R2", "m · seed=1"]
    assert notes == ["R1, R2 are the same setting (m · seed=0, k=0): each is shown in a row of its own"]


def test_json_key_order_in_a_record_tells_no_runs_apart() -> None:
    runs = [run("a", extra=[{"b": 1, "a": 2}]), run("b", extra=[{"a": 2, "b": 1}])]
    labels, notes = label_rows(table(runs), runs)
    assert labels == ["m · R1", "m · R2"] and len(notes) == 1
