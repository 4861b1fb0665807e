"""Every package the code imports by name is declared in pyproject.toml (issue 33: yarl and multidict were imported
but came only through aiohttp, so a release of aiohttp that dropped them would break the harness on install).

The package's own imports must be in `dependencies` or a user-facing extra; the tests' may also be in `dev`.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Import names whose distribution is not installed here (an optional extra), so its metadata cannot name it.
NOT_INSTALLED = {"sentence_transformers": "sentence-transformers", "vllm": "vllm", "llama_cpp": "llama-cpp-python"}
# Runs in its own virtualenv, which tests/bench/lmeval_env.py builds with lm-eval pinned: not this project's.
OWN_VENV = {ROOT / "tests" / "bench" / "lmeval_driver.py"}


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()  # PEP 503


def declared() -> dict[str, set[str]]:
    """Group ("dependencies" or an extra's name) -> the distributions it declares."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    groups = {"dependencies": project["dependencies"], **project["optional-dependencies"]}
    return {g: {normalized(re.match(r"[A-Za-z0-9._-]+", r)[0]) for r in reqs} for g, reqs in groups.items()}  # type: ignore[index]


def imported(paths: list[Path], root: Path = ROOT) -> dict[str, set[str]]:
    """Top-level module -> the files importing it, for modules outside the standard library and this project."""
    found: dict[str, set[str]] = {}
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top not in ("harness", "tests", "__future__"):
                    found.setdefault(top, set()).add(str(path.relative_to(root)))
    return found


def undeclared(modules: dict[str, set[str]], allowed: set[str]) -> list[str]:
    distributions = importlib.metadata.packages_distributions()
    missing = []
    for module, files in sorted(modules.items()):
        names = {normalized(d) for d in distributions.get(module, [NOT_INSTALLED.get(module, module)])}
        if not names & allowed:
            missing.append(f"{module} ({', '.join(sorted(names))}) imported by {', '.join(sorted(files))}")
    return missing


def test_the_package_declares_what_it_imports() -> None:
    groups = declared()
    user = set().union(*(names for g, names in groups.items() if g != "dev"))
    paths = [*sorted((ROOT / "harness").rglob("*.py")), ROOT / "run_eval.py"]
    assert undeclared(imported(paths), user) == []


def test_the_tests_declare_what_they_import() -> None:
    everything = set().union(*declared().values())
    paths = [p for p in sorted((ROOT / "tests").rglob("*.py")) if p not in OWN_VENV]
    assert undeclared(imported(paths), everything) == []


def test_an_undeclared_import_is_caught(tmp_path: Path) -> None:
    """Not vacuous: a module importing yarl, with only aiohttp declared, is reported by name."""
    source = tmp_path / "x.py"
    source.write_text("import json\nimport aiohttp\nfrom yarl import URL\n", encoding="utf-8")
    modules = imported([source], tmp_path)
    assert modules == {"aiohttp": {"x.py"}, "yarl": {"x.py"}}
    assert undeclared(modules, {"aiohttp"}) == ["yarl (yarl) imported by x.py"]
