"""No backend name is spelled outside the backend table (issue 33): what a backend can do is a field of its line in
harness/calling/backends BACKENDS, so a new backend is one module and one line, and no `name == "openai"` elsewhere
decides for it. A backend's class names itself (`name = "openai"`: its cache identity); besides that, what stays
is listed here with the reason."""

from __future__ import annotations

import ast
from pathlib import Path

from harness.calling.backends import BACKENDS

ROOT = Path(__file__).resolve().parents[2] / "harness"
# The table, and what a run's settings make of it (choose.py: with --base-url an unknown name means openai; llama.cpp's
# grammar goes through openai at a --base-url), which was the table's module until issue 43 split them apart.
TABLE = (ROOT / "calling" / "backends" / "__init__.py", ROOT / "calling" / "backends" / "choose.py")
# What runs written before a setting existed meant: their records name the backends of the day.
KEPT = {("results/read.py", "openai"), ("results/read.py", "anthropic")}


def spelled(path: Path) -> list[tuple[int, str]]:
    """(line, name) of every string constant that is a backend's name, but for a class's own `name = ...`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    own = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["name"]
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in BACKENDS and id(node) not in own
    ]


def test_no_backend_name_outside_the_table() -> None:
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        if path in TABLE:
            continue
        where = str(path.relative_to(ROOT))
        found += [f"{where}:{line}: {name!r}" for line, name in spelled(path) if (where, name) not in KEPT]
    assert found == []


def test_the_check_sees_a_name_compared(tmp_path: Path) -> None:
    source = tmp_path / "x.py"
    source.write_text('class B:\n    name = "hf"\n\ndef f(n):\n    return n == "hf" or n in ("vllm",)\n', "utf-8")
    assert spelled(source) == [(5, "hf"), (5, "vllm")]
