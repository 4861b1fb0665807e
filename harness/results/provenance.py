"""What a run needs to be reproduced: package versions and the code's git commit."""

from __future__ import annotations

import platform
import subprocess
from importlib import metadata
from pathlib import Path

from harness.calling.backends import BACKENDS

# The harness and what renders, scores and reports; each backend's own are in its line of BACKENDS.
CORE_PACKAGES = ("csts-harness", "jinja2", "numpy", "scipy", "pandas", "tenacity")
REPO = Path(__file__).resolve().parents[2]


def package_versions() -> dict[str, str | None]:
    """Installed versions of the packages that can change a result (None: not installed)."""
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in dict.fromkeys([*CORE_PACKAGES, *(p for d in BACKENDS.values() for p in d.packages)]):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def git_commit() -> dict[str, str | bool | None]:
    """HEAD of the harness checkout and whether it had uncommitted changes (None outside git)."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=5)
        if head.returncode != 0:
            return {"commit": None, "dirty": None}
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=5,
        )
        return {"commit": head.stdout.strip(), "dirty": bool(status.stdout.strip())}
    except (OSError, subprocess.TimeoutExpired):
        return {"commit": None, "dirty": None}
