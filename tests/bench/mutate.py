"""Mutation testing of the pure modules: does each module's own test file notice a small change to its code?

    python tests/bench/mutate.py [--module stats] [--max 40] [--seed 0]   # --max 0: every mutant (an hour+)
    python tests/bench/mutate.py --module stats --max 0 --survivors before.txt  # only what survived there

Our own AST mutator, not mutmut or cosmic-ray (not measured here): mutmut 3 copies the package into its own
`mutants/` layout with trampolines around every function and drives its own runner, and cosmic-ray needs a
session database and a config per module. Here a mutant is one node of a module's syntax tree changed and
written back with `ast.unparse` into a scratch copy of the repository; the module's mirrored test files run
with `pytest -x` in a fork of a process that has numpy, scipy and pandas loaded already, under a timeout:
- comparisons flipped at their boundary (< ↔ <=, > ↔ >=, == ↔ !=, in ↔ not in, is ↔ is not);
- arithmetic swapped (+ ↔ -, * ↔ /, // → /, ** → *, % → //), also in augmented assignments;
- numeric constants moved by ±1, True ↔ False;
- `and` ↔ `or`, `not x` → `x`, `-x` → `x`;
- the first two positional arguments of a call swapped (not for SYMMETRIC functions: correlations, min, max).

Docstrings, decorators (cache sizes), annotations (never evaluated: every module has `from __future__ import
annotations`), imports and string constants (mostly messages) are left alone. A mutant whose tests fail, error,
or time out is killed; one whose tests pass survived, and is printed as file:line and the change. `--max N`
samples N mutants per module (seeded by `--seed`); the output lists the kill rate per module and overall.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import os
import random
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Module -> its mirrored test files (what a developer runs after changing the module); an entry starting with "-" is
# passed to pytest as it is (`--deselect=FILE::TEST`: a test of minutes that another mirror file's tests cover).
MODULES: dict[str, list[str]] = {
    "harness/scoring/stats.py": ["tests/scoring/test_stats.py", "tests/scoring/test_stats_reference.py"],
    "harness/scoring/metrics.py": ["tests/scoring/test_metrics.py", "tests/cli/test_summary.py"],
    "harness/scoring/score.py": ["tests/scoring/test_score.py"],
    "harness/scoring/parsing.py": ["tests/scoring/test_parsing.py"],
    "harness/scoring/expected.py": ["tests/scoring/test_expected.py"],
    "harness/scoring/reasoning.py": ["tests/scoring/test_reasoning.py"],
    "harness/scoring/agreement.py": ["tests/scoring/test_agreement.py", "tests/cli/test_reannotate_merge.py"],
    "harness/scoring/reannotation.py": [
        "tests/scoring/test_reannotation.py",
        "tests/scoring/test_reannotation_merge.py",
    ],
    "harness/scoring/repeats.py": ["tests/scoring/test_repeats.py"],
    "harness/prompting/fewshot.py": [
        "tests/prompting/test_fewshot.py",
        "tests/prompting/test_fewshot_golden.py",
        "tests/prompting/test_fewshot_reference.py",
    ],
    "harness/prompting/render.py": ["tests/prompting/test_prompts.py", "tests/prompting/test_prompts_t5.py"],
    "harness/datasets/load.py": ["tests/datasets/test_data.py"],
    "harness/datasets/labels.py": ["tests/datasets/test_labels.py"],
    "harness/datasets/items.py": ["tests/datasets/test_items.py"],
    "harness/calling/cache_keys.py": ["tests/calling/test_cache_keys.py"],
    "harness/config/keys.py": ["tests/config/test_keys.py", "tests/config/test_affects.py"],
    "harness/config/option.py": ["tests/config/test_option.py", "tests/config/test_affects.py"],
    "harness/results/read.py": ["tests/results/test_read.py"],
    "harness/results/shards.py": ["tests/results/test_shards_merge.py"],
    "harness/reporting/rowkeys.py": ["tests/reporting/test_rowkeys.py"],
    "harness/results/manifest.py": ["tests/results/test_manifest.py"],
    "harness/results/stage.py": ["tests/results/test_stage.py"],
    "harness/calling/backends/reading.py": ["tests/calling/test_reading.py"],
    "harness/reporting/tables.py": ["tests/reporting/test_tables.py"],
    "harness/reporting/published.py": ["tests/reporting/test_published.py"],
    "harness/reporting/paper_settings.py": ["tests/reporting/test_paper_settings.py"],
    "harness/reporting/significance.py": ["tests/reporting/test_significance.py"],
    "harness/reporting/compare.py": ["tests/reporting/test_report_compare.py"],
    "harness/calling/backends/served.py": ["tests/calling/test_served.py"],
    "harness/config/paper.py": ["tests/config/test_paper.py"],
    "harness/config/checks.py": ["tests/config/test_validate.py", "tests/cli/test_precedence.py"],
    "harness/calling/limits.py": ["tests/calling/test_limits.py", "tests/calling/test_limiter_pacing.py"],
    "harness/calling/redaction.py": ["tests/calling/test_redaction.py"],
    "harness/calling/congestion.py": ["tests/calling/test_congestion.py", "tests/calling/test_dispatch_slots.py"],
    "harness/calling/server_queue.py": [
        "tests/calling/test_server_queue.py",
        "tests/calling/test_limiter.py",
        "tests/calling/test_server_slots.py",
    ],
    "harness/calling/backends/gauges.py": ["tests/calling/test_gauges.py"],
    "harness/scoring/vectors.py": ["tests/scoring/test_vectors.py"],
    "harness/cli/reannotate.py": [
        "tests/variants/test_reannotate_run.py",
        "tests/variants/test_reannotate_echo.py",
        "tests/cli/test_reannotate_judged.py",
    ],
    "harness/cli/report_cmd.py": ["tests/cli/test_report_cmd.py"],
    "harness/calling/attempts.py": [
        "tests/calling/test_attempts.py",
        "tests/calling/test_dispatch.py",
        "tests/calling/test_reach.py",
        "--deselect=tests/calling/test_dispatch.py::test_429_storm_loses_nothing_and_each_prompt_is_answered_once",
        "--deselect=tests/calling/test_reach.py::test_raw_prompts_to_a_chat_only_server_say_that_chat_needs_chat",
    ],
    "harness/calling/backends/base.py": [
        "tests/calling/test_backends_base.py",
        "tests/calling/test_reply_usage.py",
        "tests/calling/test_long_thought.py",
        "--deselect=tests/calling/test_reply_usage.py::test_a_hostile_usage_keeps_max_cost_on_and_every_answer_cached",
        "--deselect=tests/calling/test_long_thought.py::test_the_answer_after_a_thought_longer_than_the_cap_is_scored",
    ],
    "harness/calling/backends/provider.py": [
        "tests/calling/test_backends_api.py",
        "tests/calling/test_server_slots.py",
        "tests/calling/test_toy_backend.py",
        "tests/calling/test_provider.py",
        "--deselect=tests/calling/test_backends_api.py::test_kill_9_then_rerun_sends_only_what_is_missing_and_matches_an_uninterrupted_run",
        "--deselect=tests/calling/test_backends_api.py::test_unreachable_server_says_what_it_waits_for_then_stops_in_one_line_with_no_run_folder",
    ],
    "harness/calling/dispatch.py": [
        "tests/calling/test_dispatch.py",
        "tests/calling/test_dispatch_accounting.py",
        "tests/calling/test_call.py",
        "--deselect=tests/calling/test_dispatch.py::test_429_storm_loses_nothing_and_each_prompt_is_answered_once",
    ],
    "harness/calling/backends/openai.py": [
        "tests/calling/test_openai_backend.py",
        "tests/calling/test_transport_lean.py",
        "tests/calling/test_backends_api.py",
        "--deselect=tests/calling/test_backends_api.py::test_kill_9_then_rerun_sends_only_what_is_missing_and_matches_an_uninterrupted_run",
        "--deselect=tests/calling/test_backends_api.py::test_unreachable_server_says_what_it_waits_for_then_stops_in_one_line_with_no_run_folder",
    ],
    "harness/calling/backends/anthropic.py": [
        "tests/calling/test_anthropic_backend.py",
        "tests/calling/test_transport_lean.py",
        "tests/calling/test_backends_api.py",
        "--deselect=tests/calling/test_backends_api.py::test_kill_9_then_rerun_sends_only_what_is_missing_and_matches_an_uninterrupted_run",
        "--deselect=tests/calling/test_backends_api.py::test_unreachable_server_says_what_it_waits_for_then_stops_in_one_line_with_no_run_folder",
    ],
}

_COMPARE = {
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq,
    ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
}  # fmt: skip
_BINOP = {
    ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.FloorDiv: ast.Div,
    ast.Pow: ast.Mult, ast.Mod: ast.FloorDiv,
}  # fmt: skip
_SYMBOL = {
    ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=", ast.In: "in",
    ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not", ast.Add: "+", ast.Sub: "-", ast.Mult: "*",
    ast.Div: "/", ast.FloorDiv: "//", ast.Pow: "**", ast.Mod: "%", ast.And: "and", ast.Or: "or",
}  # fmt: skip


# Functions symmetric in their first two arguments: swapping them cannot change any output, so it is no mutant
# (scipy's spearmanr, math.isclose at its default tolerances, Cohen's kappa: p_o and p_e are symmetric).
SYMMETRIC = {"pearson", "spearman", "spearmanr", "weighted_pearson", "corr", "min", "max", "isclose", "cohen_kappa"}


@dataclass(frozen=True)
class Mutant:
    module: str
    index: int  # the node's position in ast.walk order (the same for every parse of the same source)
    kind: str
    arg: int  # which operator of a comparison, or the constant's delta
    line: int
    text: str  # what changed, in words


def _skipped(tree: ast.Module) -> set[int]:
    """ids of nodes never mutated: docstrings, annotations, decorators, imports."""
    roots: list[ast.AST] = []
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and body:
            first = body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                roots.append(first)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            roots += node.decorator_list  # lru_cache(maxsize=256) -> 257: a cache size, never an output
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = node.args
            every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
            roots += [a.annotation for a in every if a is not None and a.annotation is not None]
            if node.returns is not None:
                roots.append(node.returns)
        if isinstance(node, ast.AnnAssign):
            roots.append(node.annotation)
        if isinstance(node, ast.Import | ast.ImportFrom):
            roots.append(node)
    return {id(n) for root in roots for n in ast.walk(root)}


def mutants_of(module: str, source: str) -> list[Mutant]:
    """Every mutant of one module, in source order."""
    tree = ast.parse(source)
    skip = _skipped(tree)
    out = []
    for i, node in enumerate(ast.walk(tree)):
        if id(node) in skip:
            continue
        line = getattr(node, "lineno", 0)

        def add(kind: str, text: str, arg: int = 0, *, i: int = i, line: int = line) -> None:
            out.append(Mutant(module, i, kind, arg, line, text))

        if isinstance(node, ast.Compare):
            for j, op in enumerate(node.ops):
                new = _COMPARE[type(op)]
                add("compare", f"{_SYMBOL[type(op)]} -> {_SYMBOL[new]}", j)
        elif isinstance(node, ast.BinOp | ast.AugAssign) and type(node.op) in _BINOP:
            add("binop", f"{_SYMBOL[type(node.op)]} -> {_SYMBOL[_BINOP[type(node.op)]]}")
        elif isinstance(node, ast.BoolOp):
            add("boolop", f"{_SYMBOL[type(node.op)]} -> {'or' if isinstance(node.op, ast.And) else 'and'}")
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not | ast.USub):
            add("unary", "drop 'not'" if isinstance(node.op, ast.Not) else "drop unary '-'")
        elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
            add("bool", f"{node.value} -> {not node.value}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            for delta in (1, -1):
                add("number", f"{node.value!r} -> {node.value + delta!r}", delta)
        elif (
            isinstance(node, ast.Call)
            and len(node.args) >= 2
            and not any(isinstance(a, ast.Starred) for a in node.args[:2])
            and ast.unparse(node.func).rsplit(".", 1)[-1] not in SYMMETRIC
            and ast.dump(node.args[0]) != ast.dump(node.args[1])  # d.get(x, x) swapped is the same code
        ):
            add("swap", f"swap arguments 1 and 2 of {ast.unparse(node.func)}(...)")
    return out


def apply(source: str, m: Mutant) -> str:
    """The module's source with mutant m applied."""
    tree = ast.parse(source)
    match m.kind, list(ast.walk(tree))[m.index]:
        case "compare", ast.Compare() as node:
            node.ops[m.arg] = _COMPARE[type(node.ops[m.arg])]()
        case "binop", ast.BinOp() | ast.AugAssign() as node:
            node.op = _BINOP[type(node.op)]()
        case "boolop", ast.BoolOp() as node:
            node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        case "unary", ast.UnaryOp(op=ast.Not()) as node:
            node.operand = ast.UnaryOp(ast.Not(), node.operand)  # `not not x`: x's truth, as `if x` reads it
        case "unary", ast.UnaryOp() as node:
            node.op = ast.UAdd()  # `+x` is x for numbers
        case "bool", ast.Constant() as node:
            node.value = not node.value
        case "number", ast.Constant() as node:
            node.value = node.value + m.arg
        case "swap", ast.Call() as node:
            node.args[0], node.args[1] = node.args[1], node.args[0]
        case _:
            raise AssertionError(m)
    return ast.unparse(ast.fix_missing_locations(tree))


def _preload() -> None:
    """Import, once, the heavy libraries the tests use (never harness itself): each mutant's pytest then runs in a
    fork of this process, saving an interpreter start and a few seconds of imports per mutant."""
    sys.dont_write_bytecode = True  # a mutated module is always read from its source, never from a stale .pyc
    for name in ("numpy", "pandas", "pytest", "scipy.stats", "jinja2", "openai", "anthropic", "aiohttp"):
        importlib.import_module(name)


_CHILD = 0  # the forked test run in progress, killed with us


def _stop(*_: object) -> None:
    if _CHILD:
        os.kill(_CHILD, signal.SIGKILL)
    sys.exit(143)  # leaves the `with` of the scratch copy, which removes it


def run_tests(scratch: Path, tests: list[str], timeout: float, log: Path | None = None) -> str:
    """'passed', 'failed' or 'timeout' for the test files in the scratch copy, run in a forked child (its output
    to `log`, else discarded)."""
    global _CHILD
    pid = _CHILD = os.fork()
    if pid == 0:  # the child: quiet, in the scratch copy, with nothing of harness imported yet
        code = 3
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        try:
            os.chdir(scratch)
            sys.path.insert(0, str(scratch))
            out = os.open(log or os.devnull, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(out, 1)
            os.dup2(out, 2)
            import pytest

            code = int(pytest.main(["-x", "-q", "-p", "no:cacheprovider", "--no-header", *tests]))
        finally:
            os._exit(code)
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return "passed" if os.waitstatus_to_exitcode(status) == 0 else "failed"
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return "timeout"
        time.sleep(0.05)


def _survivors(
    scratch: Path, module: str, source: str, mutants: list[Mutant], tests: list[str], timeout: float
) -> tuple[list[Mutant] | None, float]:
    """The mutants the module's tests let pass (all of them without tests; None when the tests fail unmutated)
    and how long the unmutated tests took. The module is restored afterwards."""
    if not tests:
        return mutants, 0.0
    target = scratch / module
    target.write_text(ast.unparse(ast.parse(source)))  # the baseline goes through unparse too
    start = time.monotonic()
    baseline = run_tests(scratch, tests, 600, scratch / "baseline.log")
    took = time.monotonic() - start
    if baseline != "passed":
        tail = (scratch / "baseline.log").read_text(errors="replace").splitlines()[-15:]
        print(f"{module}: its tests do not pass unmutated ({baseline}); skipped", *tail, sep="\n", flush=True)
        return None, took
    survivors = []
    for m in mutants:
        target.write_text(apply(source, m))
        if run_tests(scratch, tests, timeout or 3 * took + 5) == "passed":
            survivors.append(m)
    target.write_text(source)
    return survivors, took


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--module", action="append", help="a substring of a module path (repeatable); default all")
    ap.add_argument("--max", type=int, default=40, help="mutants sampled per module (0: all)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the sample")
    ap.add_argument("--timeout", type=float, default=0, help="seconds per mutant (default: 3x baseline + 5)")
    ap.add_argument("--list", action="store_true", help="only list the mutants")
    ap.add_argument(
        "--survivors",
        type=Path,
        help="a previous run's output: test again only the mutants it lists as survived (after adding tests)",
    )
    args = ap.parse_args()
    modules = {m: t for m, t in MODULES.items() if not args.module or any(s in m for s in args.module)}
    # "  survived harness/x.py:12: 3 -> 4": (module, line, text); mutants of one line with one text all go again
    again = {
        (m, int(n), t.strip())
        for m, n, t in (
            line.strip().removeprefix("survived ").split(":", 2)
            for line in (args.survivors.read_text().splitlines() if args.survivors else ())
            if line.strip().startswith("survived ")
        )
    }
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")  # one thread: BLAS pools and fork() do not mix, and the cores are shared
    os.environ.setdefault("MPLBACKEND", "Agg")
    if not args.list:
        _preload()
    signal.signal(signal.SIGTERM, _stop)  # a kill still removes the scratch copy
    total_killed = total = 0
    with tempfile.TemporaryDirectory(prefix="mutate-") as tmp:
        scratch = Path(tmp)
        for name in ("harness", "tests", "templates"):
            shutil.copytree(ROOT / name, scratch / name, ignore=shutil.ignore_patterns("__pycache__"))
        for name in ("pyproject.toml", "run_eval.py"):
            shutil.copy2(ROOT / name, scratch / name)
        for module, tests in modules.items():
            tests = [t for t in tests if t.startswith("-") or (ROOT / t).is_file()]
            source = (ROOT / module).read_text()
            mutants = mutants_of(module, source)
            if args.survivors:
                mutants = [m for m in mutants if (m.module, m.line, m.text) in again]
            if args.max and len(mutants) > args.max:
                mutants = sorted(
                    random.Random(f"{args.seed}/{module}").sample(mutants, args.max), key=lambda m: m.index
                )
            if args.list:
                for m in mutants:
                    print(f"{module}:{m.line}: {m.text}")
                continue
            survivors, took = _survivors(scratch, module, source, mutants, tests, args.timeout)
            if survivors is None:
                continue
            killed = len(mutants) - len(survivors)
            total_killed, total = total_killed + killed, total + len(mutants)
            rate = 100.0 * killed / len(mutants) if mutants else 100.0
            how = f"tests {took:.1f}s" if tests else "no mirrored test file"
            print(f"{module}: {killed}/{len(mutants)} killed ({rate:.0f}%), {how}", flush=True)
            for m in survivors:
                print(f"  survived {module}:{m.line}: {m.text}", flush=True)
    if total:
        print(f"overall: {total_killed}/{total} killed ({100.0 * total_killed / total:.1f}%)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
