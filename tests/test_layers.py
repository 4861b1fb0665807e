"""The package's import graph follows the pipeline: every module imports only from its own layer or lower ones.

Layers, lowest first (README "Architecture"). An upward import is how cycles and tangles start: a reader of a
lower module should never need a higher one to follow it. Imports under `if TYPE_CHECKING:` count too.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import harness

LAYERS = [
    ("harness.types", "harness.inputs"),
    ("harness.config",),  # settings and their value checks (validate.py): what a run is, before any stage
    ("harness.datasets",),
    ("harness.prompting",),
    ("harness.scoring",),
    ("harness.calling",),
    ("harness.variants",),
    ("harness.results",),
    ("harness.reporting",),
    ("harness.runner",),
    ("harness.sweep",),
    ("harness.api",),
    ("harness.cli", "harness"),
]
ROOT = Path(harness.__file__).parent


def layer_of(module: str) -> int:
    """The layer of the longest prefix that names the module (harness.config.settings before harness.config)."""
    best, best_len = -1, -1
    for i, prefixes in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best_len:
                best, best_len = i, len(p)
    assert best >= 0, f"{module} is in no layer: add it to LAYERS"
    return best


def modules() -> dict[str, Path]:
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = ("harness", *path.relative_to(ROOT).with_suffix("").parts)
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def imports(module: str, path: Path) -> set[str]:
    """The harness modules `module` imports, anywhere in it. `from harness.x import y` is an import of the module
    harness.x.y where there is one (that of a package's child, not of the package's own code), else of harness.x."""
    found = set()
    known = modules()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and node.module.startswith("harness"):
            children = {f"{node.module}.{a.name}" for a in node.names} & known.keys()
            found.update(children)
            if len(children) < len(node.names):
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("harness"))
    return {m for m in found if m in known and m != module}


NAMED = re.compile(r"(harness(?:\.\w+)+)(?::\w+)?")


def named(module: str, path: Path) -> set[str]:
    """The harness modules a module's tables name by string ("module" or "module:Class" values of a module-level
    dict, such as BACKENDS, VARIANTS, DATASETS, SECTIONS): imported when a run uses the entry, so they count as
    imports of the table's module."""
    found = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
        if isinstance(value, ast.Dict):
            for inner in ast.walk(value):
                if isinstance(inner, ast.Constant) and isinstance(inner.value, str) and NAMED.fullmatch(inner.value):
                    found.add(NAMED.fullmatch(inner.value).group(1))  # type: ignore[union-attr]
    return (found & modules().keys()) - {module}


def edges(module: str, path: Path) -> set[str]:
    """Imports and the modules its tables name."""
    return imports(module, path) | named(module, path)


def test_every_module_imports_only_its_own_layer_or_lower() -> None:
    upward = []
    for module, path in sorted(modules().items()):
        if module == "harness":  # the public API's lazy exports name the layers they come from
            continue
        for target in sorted(edges(module, path)):
            if layer_of(target) > layer_of(module):
                upward.append(f"{module} -> {target}")
    assert upward == []


def test_the_layer_check_sees_an_upward_import(tmp_path: Path) -> None:
    """The check is not vacuous: a scoring module importing the runner is caught."""
    assert layer_of("harness.scoring.parsing") < layer_of("harness.runner")
    assert (
        layer_of("harness.config.validate") == layer_of("harness.config.settings") < layer_of("harness.datasets.load")
    )
    source = tmp_path / "x.py"
    source.write_text("from harness.runner import run\n", encoding="utf-8")
    assert imports("harness.scoring.x", source) == {"harness.runner"}


def test_config_checks_cannot_reach_up_to_the_stages(tmp_path: Path) -> None:
    """The checks that need backends or variants live in those layers (harness/calling/validate.py,
    harness/variants/validate.py): config/validate.py importing either again is an upward arrow."""
    source = tmp_path / "validate.py"
    source.write_text(
        "from harness.calling.backends import BACKENDS\nimport harness.variants.answers\n", encoding="utf-8"
    )
    found = imports("harness.config.validate", source)
    assert found == {"harness.calling.backends", "harness.variants.answers"}
    assert all(layer_of(t) > layer_of("harness.config.validate") for t in found)


def test_no_import_cycle() -> None:
    assert cycles_in(import_graph(modules())) == []


def tables() -> dict[str, Path]:
    """The modules holding a table that names modules by string (BACKENDS, VARIANTS, DATASETS, SECTIONS)."""
    return {m: p for m, p in modules().items() if m != "harness" and named(m, p)}  # harness: lazy exports


# Loops through a table's strings that are known and not yet undone, with why (a strict xfail: the test fails once
# the loop is gone, so that the entry is removed). None now: the last, through BACKENDS, went in issue 43 (a module
# the table names is built from its own line, `from_config(config, line)`, and imports description.py, never the
# table or choose.py; a batch endpoint's base no longer reaches pricing.py through options.py: `with_retries` is
# the flow's, batch/state.py).
KNOWN_LOOPS: dict[str, str] = {}


@pytest.mark.parametrize(
    "table",
    [
        pytest.param(t, marks=pytest.mark.xfail(reason=KNOWN_LOOPS[t], strict=True)) if t in KNOWN_LOOPS else t
        for t in sorted(tables())
    ],
)
def test_no_loop_through_a_tables_strings(table: str) -> None:
    """A table's strings count as imports (they are imported when a run uses the entry): no module a table names
        leads back to the table (issue 43: backends/__init__.py was the table and the helpers its providers imported
        back; the helpers are choose.py; the datasets' table, its loaders and its chooser are apart likewise, and the
    report sections' shape is part.py, their building report.py)."""
    graph = {m: edges(m, p) for m, p in modules().items() if m != "harness"}
    assert [c for c in cycles_in(graph) if table in c.split(" -> ")] == []


def test_a_tables_strings_count_as_imports(tmp_path: Path) -> None:
    """The check is not vacuous: a table naming a module that imports the table back is seen, as it was before
    the helpers left backends/__init__.py (`from harness.calling.backends import described` in openai.py)."""
    table = tmp_path / "table.py"
    table.write_text(
        'T: dict[str, str] = {"openai": "harness.calling.backends.openai", "b": "harness.calling.batch.openai:B"}\n'
        'help = "harness.runner"\n',  # not a table: a plain string is no import
        encoding="utf-8",
    )
    assert named("harness.calling.backends", table) == {
        "harness.calling.backends.openai",
        "harness.calling.batch.openai",
    }
    provider = tmp_path / "openai.py"
    provider.write_text("from harness.calling.backends import described, local_models\n", encoding="utf-8")
    assert imports("harness.calling.backends.openai", provider) == {
        "harness.calling.backends",
        "harness.calling.backends.local_models",
    }


def test_the_cycle_check_counts_a_package_importing_its_own_child(tmp_path: Path) -> None:
    """A package's __init__ importing its child, which imports the package back, is a cycle: importing the child
    first runs the package's __init__, which then needs the half-imported child (issue 33: backends/__init__ ->
    embeddings -> openai -> backends went unseen while package -> own child edges were dropped)."""
    sources = {
        "harness.calling.backends": "def make():\n    from harness.calling.backends.embeddings import E\n",
        "harness.calling.backends.embeddings": "from harness.calling.backends.openai import OpenAIBackend\n",
        "harness.calling.backends.openai": "from harness.calling.backends import backend_key\n",
    }
    paths = {}
    for module, text in sources.items():
        paths[module] = tmp_path / f"{module}.py"
        paths[module].write_text(text, encoding="utf-8")
    assert cycles_in(import_graph(paths)) == [
        "harness.calling.backends -> harness.calling.backends.embeddings -> harness.calling.backends.openai"
        " -> harness.calling.backends"
    ]


def import_graph(paths: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the harness modules it imports, anywhere in it (a function's lazy import too), a package's
    __init__ importing its own children included: that edge closes a cycle like any other."""
    return {m: imports(m, p) for m, p in paths.items()}


def cycles_in(graph: dict[str, set[str]]) -> list[str]:
    """Every cycle a depth-first walk of the graph meets."""
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for t in sorted(graph.get(m, ())):
            if state.get(t) == 1:
                cycles.append(" -> ".join([*stack[stack.index(t) :], t]))
            elif t not in state:
                visit(t)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    return cycles
