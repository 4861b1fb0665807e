"""C-STS / STS-B evaluation of language models by prompting.

The Python API (README "Python API"): `from harness import RunConfig, evaluate, evaluate_sweep`.
Names are loaded on first use, so `import harness` (and `python run_eval.py --help`) stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = [
    "ApiOptions",
    "BatchOptions",
    "Evaluation",
    "HarnessError",
    "LocalOptions",
    "RunConfig",
    "SweepEvaluation",
    "evaluate",
    "evaluate_sweep",
]

# Which module each public name lives in: one explicit table, read by __getattr__ below.
_EXPORTS = {
    "ApiOptions": "harness.config.settings",
    "BatchOptions": "harness.config.settings",
    "LocalOptions": "harness.config.settings",
    "RunConfig": "harness.config.settings",
    "HarnessError": "harness.types",
    "Evaluation": "harness.api",
    "SweepEvaluation": "harness.api",
    "evaluate": "harness.api",
    "evaluate_sweep": "harness.api",
}

if TYPE_CHECKING:
    from harness.api import Evaluation, SweepEvaluation, evaluate, evaluate_sweep
    from harness.config.settings import ApiOptions, BatchOptions, LocalOptions, RunConfig
    from harness.types import HarnessError


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_EXPORTS[name]), name)
