"""The package installs and runs as a wheel (issue 43): a run from outside the checkout, with nothing of the
checkout on the path, finds its templates, data and recipes inside the installed package.

Installing a wheel is unpacking it into site-packages; the test unpacks it into a folder of its own and puts only
that folder on PYTHONPATH (the dependencies come from this environment; .ci/run also installs the wheel with pip
into a fresh virtualenv and runs it there).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# What a checkout holds at its top beyond its tracked files: not part of what the wheel is built from.
NOT_SOURCE = {".git", ".venv", ".venv-vllm", "results", "build", "dist", "csts_harness.egg-info"}
# The run, then every module of the harness it loaded: all must come from the unpacked wheel (an editable install
# of the checkout in this environment would otherwise quietly supply a module the wheel lacks).
RUN = """import json, sys
from harness.cli.main import main
try:
    code = main()
finally:
    print(json.dumps(sorted({m.__file__ for n, m in sys.modules.items() if n.split(".")[0] == "harness"})))
sys.exit(code)
"""


def _not_source(folder: str, names: list[str]) -> set[str]:
    top = NOT_SOURCE if Path(folder) == ROOT else set()
    return {n for n in names if n in top or n == "__pycache__" or n.endswith("_cache")}


@pytest.mark.slow
def test_a_wheel_runs_from_outside_the_checkout(tmp_path: Path) -> None:
    source = tmp_path / "source"  # a copy: setuptools' build/ folder would otherwise keep files since deleted
    shutil.copytree(ROOT, source, ignore=_not_source)
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation", "-q", "-w", dist],
        check=True,
        capture_output=True,
    )
    (wheel,) = dist.glob("csts_harness-*.whl")
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as z:
        z.extractall(site)
        entry = next(n for n in z.namelist() if n.endswith(".dist-info/entry_points.txt"))
        scripts = z.read(entry).decode()
    assert "csts-eval = harness.cli.main:main" in scripts

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site)}
    args = ["--dataset", "stsb", "--model", "overlap", "--limit", "20", "--shots", "2", "--instr", "short"]
    out = subprocess.run(
        [sys.executable, "-c", RUN, *args, "--results-dir", "r", "--no-progress"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    loaded = json.loads(out.stdout.splitlines()[-1])
    assert len(loaded) > 50
    assert [f for f in loaded if not f.startswith(str(site / "harness") + os.sep)] == []
    (run,) = (elsewhere / "r").iterdir()
    config = json.loads((run / "config.json").read_text())
    shipped = hashlib.sha256((ROOT / "templates" / "stsb" / "short.j2").read_bytes()).hexdigest()
    assert config["template_hashes"]["stsb/short.j2"] == shipped
    assert config["git"] == {"commit": None, "dirty": None}  # no checkout: not whatever repository holds the site
    assert len((run / "samples.jsonl").read_text().splitlines()) == 20
