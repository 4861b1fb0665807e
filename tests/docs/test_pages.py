"""The pages say what the code does: every module on the architecture page, every skip reason on the testing page,
figures only on the benchmarks page, C-STS text's whereabouts and the shared-folder variable where a reader looks."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def test_the_architecture_page_names_every_module() -> None:
    page = (DOCS / "architecture.md").read_text(encoding="utf-8")
    words = set(re.findall(r"[\w.]+", page))
    missing = [
        str(p.relative_to(ROOT))
        for p in sorted((ROOT / "harness").rglob("*.py"))
        if p.stem != "__init__" and p.stem not in words and p.name not in words
    ]
    assert missing == [], f"docs/architecture.md does not name {missing}"


def _literal(node: ast.expr, names: dict[str, ast.expr]) -> str:
    """A skip reason's text up to its first placeholder (a constant, an f-string's head, or a module-level name)."""
    if isinstance(node, ast.Name) and node.id in names:
        return _literal(names[node.id], names)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        head = []
        for part in node.values:
            if not (isinstance(part, ast.Constant) and isinstance(part.value, str)):
                break
            head.append(part.value)
        return "".join(head)
    return ""


def skip_reasons() -> dict[str, str]:
    """{the opening words of each skip reason in tests/: the file that gives it}."""
    found = {}
    for path in sorted((ROOT / "tests").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {
            t.id: n.value for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)
        }
        for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)):
            given = [k.value for k in call.keywords if k.arg == "reason"]
            if call.func.attr == "skip" and call.args:
                given.append(call.args[0])
            if call.func.attr not in ("skip", "skipif", "importorskip"):
                continue
            for node in given:
                head = re.split(r"[(:{,]", _literal(node, names))[0].strip()
                # A reason without a fixed opening of 8 characters or more ("{page.name} shows no command",
                # "needs {PATH}") could not be looked up: it is reported as such, not passed over.
                key = head if len(head) >= 8 else f"<no fixed opening: line {call.lineno}>"
                found[key] = str(path.relative_to(ROOT))
    return found


def test_the_testing_page_explains_every_skip_reason() -> None:
    page = (DOCS / "testing.md").read_text(encoding="utf-8")
    reasons = skip_reasons()
    assert len(reasons) >= 8  # the reader of this test: the scan found the skips (a refactor could blind it)
    assert {head: where for head, where in reasons.items() if head not in page} == {}


def test_the_shared_folder_variable_is_the_one_the_tests_read() -> None:
    conftest = (ROOT / "tests" / "conftest.py").read_text(encoding="utf-8")
    variable = re.search(r'os\.environ\.get\("(\w+)", ROOT\.parent / "shared"\)', conftest)
    assert variable is not None
    for page in (ROOT / "README.md", DOCS / "testing.md"):
        assert variable.group(1) in page.read_text(encoding="utf-8"), page.name
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "python -m pytest -n auto -rs" in readme  # skip reasons shown; .ci/run runs the same command
    assert "python -m pytest -n auto -rs" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_the_slow_tests_are_left_out_by_default_and_ci_runs_them() -> None:
    """Issue 33: the README's command leaves out the tests marked slow, .ci/run runs them after it, and the pages
    say how to run them."""
    import shlex
    import tomllib

    pytest_ini = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]
    addopts = shlex.split(pytest_ini["addopts"])
    assert addopts[addopts.index("-m") + 1] == "not slow"
    assert any(m.startswith("slow:") for m in pytest_ini["markers"])
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert ci.index("python -m pytest -n auto -rs") < ci.index("python -m pytest -n auto -rs -m slow")
    for page in (ROOT / "README.md", DOCS / "testing.md"):
        assert "python -m pytest -n auto -rs -m slow" in page.read_text(encoding="utf-8"), page.name


FIGURE = re.compile(r"\b\d+(?:[.,]\d+)? ?(?:ms|s CPU|MiB|GiB|GB|MB|min|queries/s|requests/s)(?!\w)")


def test_measured_figures_live_on_the_benchmarks_page() -> None:
    """A time, size or rate measured on one machine is quoted in docs/benchmarks.md with its machine and date;
    other pages link there. The README's quick start keeps its own install sizes (measured with the README)."""
    pages = [p for p in sorted(DOCS.glob("*.md")) if p.name not in ("benchmarks.md", "options.md")]
    found = {}
    for page in pages:
        text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.S | re.M)
        hits = [m.group(0) for m in FIGURE.finditer(text) if m.group(0) not in ALLOWED.get(page.name, ())]
        if hits:
            found[page.name] = hits
    assert found == {}


ALLOWED = {  # sizes and times that are settings or limits, not measurements
    "backends.md": ("250 ms", "100 ms", "50 ms", "1 MB"),  # happy eyeballs; the bench server; a lock wait; a cut
    "running.md": ("1 MB", "1 MiB"),  # the reply cut; the --config file's bound
    "reports.md": ("2 GiB", "64 MiB"),  # the bounds on a run file read back
    "batch.md": ("200 MB", "256 MB"),  # the providers' batch file limits
}


def test_every_console_script_is_documented_and_run() -> None:
    """pyproject's [project.scripts] (csts-eval): named in the README, and shown in a command docs/ runs."""
    import tomllib

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    shown = "\n".join(
        re.findall(r"^```bash\n(.*?)^```", (DOCS / "running.md").read_text(encoding="utf-8"), re.S | re.M)
    )
    for name in scripts:
        assert f"`{name}`" in readme
        assert re.search(rf"^{re.escape(name)} ", shown, re.M), f"no command in running.md starts with {name}"


def test_the_quick_start_shows_progress() -> None:
    """The first command a newcomer runs takes minutes on a CPU: it must not hide its progress bar."""
    first = re.search(r"^```bash\n(.*?)^```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S | re.M)
    assert first is not None
    runs = [line for line in first.group(1).splitlines() if "run_eval.py" in line]
    assert runs and not any("--no-progress" in line for line in runs)
