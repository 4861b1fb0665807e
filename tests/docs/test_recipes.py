"""docs/extending.md's recipes, followed in a scratch copy of the package (issue 43), so that the guide cannot go
stale: for each kind, the toy extension's module goes where the page's file table puts a new one, the page's own
entry snippet becomes one more key of the table it names (or, for an option, one more field of RunConfig), and a
command the page says then reaches it runs in the copy, with only the copy on the path (no tests/, no checkout).

A page that names a file that is not where the table is, or shows an entry that no longer builds, fails here; the
toy tests (tests/calling/test_new_backend.py ...) check the same extensions' numbers in-process.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "extending.md"
SNIPPET = re.compile(r'^(\w+)\["([\w-]+)"\] = (\w+)\((.*?)^\)', re.S | re.M)

pytestmark = pytest.mark.slow  # a copy of the package and a few runs per kind: about a minute in all


def part(heading: str) -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(heading + "\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def python_block(heading: str) -> str:
    return re.findall(r"^```python\n(.*?)^```", part(heading), re.S | re.M)[0]


def table_file(heading: str, table: str) -> str:
    """The file the page's table says holds TABLE (the row whose text names it)."""
    rows = [line for line in part(heading).splitlines() if line.startswith("| `") and f"`{table}`" in line]
    assert len(rows) == 1, f"{heading}: one row must name {table}"
    return re.findall(r"`([^`]+)`", rows[0].split("|")[1])[0]


def new_module_row(heading: str, module: str) -> None:
    """The entry's module is where the page's `<name>` row puts a new one."""
    path = module.replace(".", "/") + ".py"
    rows = [re.findall(r"`([^`]+)`", line.split("|")[1]) for line in part(heading).splitlines() if "<name>" in line]
    patterns = [re.escape(n).replace(re.escape("<name>"), r"[\w-]+") for row in rows for n in row if "<name>" in n]
    assert any(re.fullmatch(p, path) for p in patterns), f"{heading}: no row names {path}"


def scratch(tmp: Path) -> Path:
    copy = tmp / "copy"
    copy.mkdir()
    for name in ("harness", "templates"):
        shutil.copytree(ROOT / name, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "run_eval.py", copy)
    return copy


def add_entry(copy: Path, heading: str) -> tuple[str, str, str]:
    """The page's snippet `TABLE["key"] = Entry(...)` as one more key of the table's dict literal in the file the
    page names; returns (table, key, the module string of the entry, if it has one)."""
    table, key, cls, body = SNIPPET.search(python_block(heading)).groups()  # type: ignore[union-attr]
    path = copy / table_file(heading, table)
    source = path.read_text(encoding="utf-8")
    start = re.search(rf"^{table}: dict\[str, \w+\] = {{\n", source, re.M)
    assert start, f"{path} defines no {table}"
    end = source.index("\n}", start.end())
    entry = f'    "{key}": {cls}({body.rstrip()}\n    ),'
    path.write_text(source[: end + 1] + entry + source[end:], encoding="utf-8")
    module = re.search(r'"(harness(?:\.\w+)+)"', body)
    return table, key, module.group(1) if module else ""


def run(copy: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(copy)} | (env or {})
    return subprocess.run(
        [sys.executable, *args], cwd=copy, env=environ, capture_output=True, text=True, timeout=300, check=False
    )


def ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stderr
    return done.stdout


def metrics(copy: Path, run_id: str) -> dict[str, float]:
    return json.loads((copy / "r" / run_id / "metrics.json").read_text())  # type: ignore[no-any-return]


def test_a_new_backend_as_the_page_says(tmp_path: Path) -> None:
    heading = "## A new backend"
    copy = scratch(tmp_path)
    _, key, module = add_entry(copy, heading)
    new_module_row(heading, module)
    toy = (ROOT / "tests" / "calling" / "toy_backend.py").read_text().replace('"toy"', f'"{key}"')
    (copy / (module.replace(".", "/") + ".py")).write_text(toy)
    assert key in ok(run(copy, "run_eval.py", "--help"))  # --backend's help reads the table
    prefix = re.search(r'prefixes=\("([^"]+)"', python_block(heading)).group(1)  # type: ignore[union-attr]
    key_env = re.search(r'key_env="(\w+)"', python_block(heading)).group(1)  # type: ignore[union-attr]
    common = ["--dataset", "stsb", "--limit", "20", "--results-dir", "r", "--no-progress"]
    # The model name the entry's prefix implies reaches the toy provider, which scores as the overlap baseline does.
    ok(run(copy, "run_eval.py", "--model", f"{prefix}1", *common, "--run-id", "toy", env={key_env: "k" * 20}))
    ok(run(copy, "run_eval.py", "--model", "overlap", *common, "--run-id", "overlap"))
    assert json.loads((copy / "r" / "toy" / "config.json").read_text())["backend"] == key
    assert metrics(copy, "toy")["spearman"] == metrics(copy, "overlap")["spearman"]


def test_a_new_variant_as_the_page_says(tmp_path: Path) -> None:
    heading = "## A new variant"
    copy = scratch(tmp_path)
    _, key, module = add_entry(copy, heading)
    new_module_row(heading, module)
    shutil.copy(ROOT / "tests" / "variants" / "toy_variant.py", copy / (module.replace(".", "/") + ".py"))
    shutil.copytree(ROOT / "tests" / "datasets" / "toy_conditions", copy / "toy_conditions")
    data = ["--dataset", "toy_conditions/toy.toml", "--model", "overlap", "--results-dir", "r", "--no-progress"]
    ok(run(copy, "run_eval.py", *data, "--variant", key, "--run-id", "mine"))
    samples = [json.loads(x) for x in (copy / "r" / "mine" / "samples.jsonl").read_text().splitlines()]
    first = json.loads((copy / "toy_conditions" / "dev.jsonl").read_text().splitlines()[0])
    assert f"{first['s1']} {first['aspect']}" in samples[0]["prompt"]  # the toy writes the condition after each


def test_a_new_metric_as_the_page_says(tmp_path: Path) -> None:
    heading = "## A new metric"
    copy = scratch(tmp_path)
    metrics_py = copy / table_file(heading, "METRICS")
    function = (ROOT / "tests" / "scoring" / "toy_metric.py").read_text()
    function = function[function.index("def ") :]  # its imports (math, numpy) are metrics.py's already
    source = metrics_py.read_text()
    at = source.index("METRICS: dict[")
    metrics_py.write_text(source[:at] + function + "\n\n" + source[at:])  # "a pure function ... and one entry"
    _, key, _ = add_entry(copy, heading)
    out = ok(run(copy, "run_eval.py", "--model", "overlap", "--dataset", "stsb", "--limit", "30", "--results-dir", "r"))
    assert f" {key}=" in out  # the run's summary line
    ok(run(copy, "run_eval.py", "report", "r", "--out", "rep"))
    assert f"({key}) |" in (copy / "rep" / "report.md").read_text()  # the report's More metrics


def test_a_new_report_section_as_the_page_says(tmp_path: Path) -> None:
    heading = "## A new report section"
    copy = scratch(tmp_path)
    _, key, module = add_entry(copy, heading)
    new_module_row(heading, module)
    shutil.copy(ROOT / "tests" / "reporting" / "toy_section.py", copy / (module.replace(".", "/") + ".py"))
    title = re.search(rf'"{re.escape(module)}",[^\n]*\n\s*"([^"]+)"', python_block(heading)).group(1)  # type: ignore[union-attr]
    ok(run(copy, "run_eval.py", "--model", "overlap", "--dataset", "stsb", "--limit", "10", "--results-dir", "r"))
    ok(run(copy, "run_eval.py", "report", "r", "--out", "rep"))
    assert f"## {title}" in (copy / "rep" / "report.md").read_text()
    assert f'<section id="{key}">' in (copy / "rep" / "index.html").read_text()


def test_a_new_dataset_as_the_page_says(tmp_path: Path) -> None:
    """A dataset touches no file of the package: its TOML and CSVs anywhere, here beside the copy."""
    copy = scratch(tmp_path)
    shutil.copytree(ROOT / "tests" / "datasets" / "toy_sts", tmp_path / "mine")
    out = ok(run(copy, "run_eval.py", "--dataset", str(tmp_path / "mine" / "toy.toml"), "--model", "overlap"))
    assert out.startswith("overlap: n=30 ")


def test_a_new_option_as_the_page_says(tmp_path: Path) -> None:
    """The page's field goes into RunConfig itself (settings.py, as its table says); the flag, its help and its
    check follow from the declaration alone."""
    heading = "## Adding an option"
    copy = scratch(tmp_path)
    block = python_block(heading)
    field = re.search(r"^    (\w+): .*?^    \)\n", block, re.S | re.M)
    assert field, "the page's snippet declares no field"
    settings = copy / "harness" / "config" / "settings.py"
    assert "`harness/config/settings.py`" in part(heading)
    source = settings.read_text()
    start = source.index("\nclass RunConfig")
    after = re.compile(r"^\S", re.M).search(source, source.index("\n", start + 1) + 1)  # the next top-level line
    body_end = source.rindex("\n\n", start, after.start()) if after else len(source.rstrip("\n"))
    settings.write_text(source[:body_end] + "\n" + field.group(0).rstrip("\n") + source[body_end:])
    flag = "--" + field.group(1).replace("_", "-")
    assert flag in ok(run(copy, "run_eval.py", "--help"))
    bad = run(copy, "run_eval.py", "--model", "overlap", "--dataset", "stsb", flag, "0", "--results-dir", "r")
    assert (bad.returncode, bad.stderr) == (2, f"error: {flag} must be at least 1, got 0\n")
    assert not (copy / "r").exists()
    ok(run(copy, "run_eval.py", "--model", "overlap", "--dataset", "stsb", "--limit", "5", flag, "7", "--run-id", "o",
           "--results-dir", "r"))  # fmt: skip
    assert json.loads((copy / "r" / "o" / "config.json").read_text())["settings"][field.group(1)] == 7
