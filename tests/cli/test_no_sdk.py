"""A run that sends no request loads no API SDK: importing openai or anthropic costs about a second of CPU each,
and a dry run (which only prices the requests) or an offline baseline has nothing to send (issue 12)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

# Runs the command line in a fresh interpreter (this one has imported who knows what), then names the SDK
# packages it loaded. Exit status and modules are printed last, whatever the run printed before.
PROBE = """
import json, sys
from harness.cli.main import main
code = main(json.loads(sys.argv[1]))
print(json.dumps({"exit": code, "sdks": sorted({m.split(".")[0] for m in sys.modules} & {"openai", "anthropic"})}))
"""


def _probe(args: list[str], tmp_path: Path, env: dict[str, str] | None = None) -> dict[str, object]:
    argv = [*args, "--results-dir", str(tmp_path / "results"), "--no-progress"]
    no_keys = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(argv)],
        cwd=ROOT,  # so that `import harness` is this checkout's
        env=no_keys | (env or {}),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.stdout, proc.stderr
    return dict(json.loads(proc.stdout.splitlines()[-1]))


@pytest.mark.parametrize(
    "args",
    [
        ["--model", "gpt-4o", "--dry-run"],
        ["--model", "o3-mini", "--shots", "2", "--instr", "long", "--dry-run"],  # a reasoning model's budget
        ["--model", "claude-3-5-sonnet-latest", "--dry-run"],
        ["--model", "gpt-4o,claude-3-5-sonnet-latest", "--shots", "0,2", "--dry-run"],  # a dry-run sweep
        ["--model", "gpt-4o", "--variant", "qa", "--answer-model", "claude-3-5-haiku-latest", "--dry-run"],
        ["--model", "overlap"],
        ["--model", "overlap,random", "--instr", "none,long", "--shots", "0,2"],  # a sweep and its report
    ],
    ids=["openai", "openai-reasoning", "anthropic", "sweep", "qa", "overlap", "offline-sweep"],
)
def test_a_run_that_sends_nothing_loads_no_sdk(args: list[str], tmp_path: Path, csts_dir: Path) -> None:
    result = _probe([*args, "--data-dir", str(csts_dir), "--limit", "6"], tmp_path)
    assert result == {"exit": 0, "sdks": []}


def test_the_probe_sees_the_sdk_a_real_run_loads(tmp_path: Path, csts_dir: Path) -> None:
    """Not vacuous: a run that would send builds its backend, SDK and all (here --max-cost 0 then sends nothing,
    and the run stops with exit 2)."""
    args = ["--model", "gpt-4o", "--max-cost", "0", "--data-dir", str(csts_dir), "--limit", "2"]
    result = _probe(args, tmp_path, env={"OPENAI_API_KEY": "sk-test"})
    assert result == {"exit": 2, "sdks": ["openai"]}
