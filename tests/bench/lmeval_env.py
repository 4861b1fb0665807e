"""A separate virtualenv holding lm-evaluation-harness for tests/bench/bench_vs_lmeval.py (not collected by pytest).

    python tests/bench/lmeval_env.py      # create (or check) it and print its versions

lm-eval's `local-chat-completions` model needs its `api` extra (aiohttp, requests, tenacity, tqdm, tiktoken);
the base package brings datasets, evaluate, scikit-learn... but no torch. The venv is built once under
~/.cache/csts-harness/ (or $CSTS_BENCH_LMEVAL_VENV) and reused while its marker names the same requirement.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

LMEVAL_VERSION = "0.4.13"
REQUIREMENT = f"lm-eval[api]=={LMEVAL_VERSION}"
DEFAULT_DIR = Path.home() / ".cache" / "csts-harness" / "bench-lmeval-venv"
MARKER = "csts-bench-requirement.txt"
VERSIONS_CODE = (
    "import importlib.metadata as m, json, platform;"
    "print(json.dumps({'python': platform.python_version(), "
    "**{p: m.version(p) for p in ('lm_eval', 'aiohttp', 'tenacity', 'requests')}}))"
)


def venv_dir() -> Path:
    return Path(os.environ.get("CSTS_BENCH_LMEVAL_VENV", DEFAULT_DIR))


def venv_python(root: Path) -> Path:
    return root / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def ensure_venv(root: Path | None = None, quiet: bool = False) -> Path:
    """The lm-eval venv's python, creating the venv and installing lm-eval from PyPI when it is missing."""
    root = root or venv_dir()
    python, marker = venv_python(root), root / MARKER
    if python.exists() and marker.exists() and marker.read_text().strip() == REQUIREMENT:
        return python
    print(f"installing {REQUIREMENT} into {root} (once; reused later)...", file=sys.stderr, flush=True)
    venv.EnvBuilder(with_pip=True, clear=True).create(root)
    pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check"] + (["-q"] if quiet else [])
    subprocess.run([*pip, REQUIREMENT], check=True, stdout=sys.stderr)
    marker.write_text(REQUIREMENT + "\n")
    return python


def versions(python: Path) -> dict[str, str]:
    """Python and package versions inside the lm-eval venv."""
    out = subprocess.run([str(python), "-c", VERSIONS_CODE], check=True, capture_output=True, text=True).stdout
    return dict(json.loads(out))


if __name__ == "__main__":
    print(versions(ensure_venv()))
