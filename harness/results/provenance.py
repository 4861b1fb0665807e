"""What a run needs to be reproduced: package versions and the code's git commit; the endpoints it called."""

from __future__ import annotations

import platform
import subprocess
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

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
    """HEAD of the harness checkout and whether it had uncommitted changes (None outside git, and for an installed
    wheel: its folder is no checkout, and git would report whatever repository the virtualenv happens to sit in)."""
    if not (REPO / ".git").exists():
        return {"commit": None, "dirty": None}
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


def endpoints(config: Mapping[str, Any]) -> list[str]:
    """The endpoints other than its provider's own API that a run (its config.json) sent requests to: the base URLs
    the backend recorded (what the SDK resolved), else those given in the settings; [] for the provider's API."""
    params = config.get("backend_params") or {}
    given = ((config.get("settings") or {}).get("api") or {}).get("base_urls") or []
    recorded = params.get("base_urls") if isinstance(params, dict) else None
    urls = recorded or given
    # The provider's own API (its `url` in BACKENDS): a run that called anything else (--base-url, OPENAI_BASE_URL:
    # a proxy, a local stand-in) did not necessarily ask the model its name says, so no published number is set beside.
    described = BACKENDS.get(str(config.get("backend")))
    own = described.url if described else None
    return sorted({str(u) for u in urls if str(u).rstrip("/") != own})
