"""docs/extending.md is true: every file its tables name exists, every table it names is defined in the file it
names, and each kind's toy-extension test (which adds one the documented way and runs it) uses exactly those."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "extending.md"
# Per kind: its heading on the page, the test that adds a toy one, and the table that test adds its entry to.
KINDS = {
    "backend": ("## A new backend", "tests.calling.test_new_backend", "BACKENDS"),
    "variant": ("## A new variant", "tests.variants.test_new_variant", "VARIANTS"),
    "metric": ("## A new metric", "tests.scoring.test_new_metric", "METRICS"),
    "section": ("## A new report section", "tests.reporting.test_new_section", "SECTIONS"),
    "dataset": ("## A new dataset", "tests.datasets.test_files", "DATASETS"),
}


def part(heading: str) -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(heading + "\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def table_rows(text: str) -> list[tuple[list[str], str]]:
    """(files named in the first column, the second column) of each row of the part's file table."""
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("| `") else []
        if cells:
            rows.append((re.findall(r"`([^`]+)`", cells[0]), " | ".join(cells[1:])))
    return rows


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_file_named_exists(kind: str) -> None:
    heading = KINDS[kind][0]
    rows = table_rows(part(heading))
    assert rows, f"{heading}: no file table"
    for files, _ in rows:
        for name in files:
            path = ROOT / name
            # <name> stands for the extension's own file: its folder must exist
            assert (path.parent if "<name>" in name else path).exists(), f"{heading}: {name} does not exist"


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_table_named_is_where_the_toy_test_adds_its_entry(kind: str) -> None:
    heading, test_module, table = KINDS[kind]
    rows = table_rows(part(heading))
    named = [f for files, what in rows for f in files if f"`{table}`" in what]
    assert len(named) == 1, f"{heading}: one row must name the table {table}"
    source = (ROOT / named[0]).read_text(encoding="utf-8")
    assert re.search(rf"^{table}: dict\[str, \w+\] = {{", source, re.M), f"{named[0]} defines no table {table}"
    test = importlib.import_module(test_module)
    # The toy test patches that very object: the one the named file defines.
    module = importlib.import_module(_module_of(test, table))
    assert getattr(module, table) is getattr(test, table)
    assert Path(inspect.getsourcefile(module) or "").resolve() == (ROOT / named[0]).resolve()
    # And every file the toy test says it had to touch is on the page.
    listed = {f for files, _ in rows for f in files}
    assert set(test.DOCUMENTED) <= listed, f"{heading}: {set(test.DOCUMENTED) - listed} missing"


def _module_of(test: object, table: str) -> str:
    """The module the toy test imported the table from (its `from X import TABLE`)."""
    source = inspect.getsource(test)  # type: ignore[arg-type]
    found = re.search(rf"^from ([\w.]+) import [^\n]*\b{table}\b", source, re.M)
    assert found, f"{test} imports no {table}"
    return found.group(1)
