"""Explicit wiring from a model name to a backend: one dict, one function, no registries."""

from __future__ import annotations

import os

from harness.backends.base import Backend
from harness.backends.hf import HFBackend
from harness.backends.offline import OverlapScorer, RandomScorer
from harness.backends.vllm import VllmBackend
from harness.types import HarnessError, RunConfig

OFFLINE_MODELS = ("random", "overlap")
BACKENDS = ("offline", "openai", "anthropic", "vllm", "hf")  # vllm, hf: a hub id or local path, never implied
_KEYS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


def backend_for(model: str) -> str:
    """The backend a model name implies; --backend overrides it."""
    if model in OFFLINE_MODELS:
        return "offline"
    if model.startswith("claude"):
        return "anthropic"
    if model.startswith(("gpt-", "o1", "o3", "o4", "chatgpt", "text-")):
        return "openai"
    raise HarnessError(
        f"unknown model {model!r}: pass --backend ({', '.join(BACKENDS)}) to say how to reach it, "
        f"or use an offline baseline ({', '.join(OFFLINE_MODELS)})"
    )


def make_backend(config: RunConfig, label_range: tuple[float, float]) -> Backend:
    """Build the run's backend; fails in one line before any work when it cannot be used."""
    name = config.backend or backend_for(config.model)
    match name:
        case "offline":
            if config.model == "random":
                return RandomScorer()
            if config.model == "overlap":
                return OverlapScorer(label_range=label_range)
            raise HarnessError(
                f"offline backend has no model {config.model!r}; choose from {', '.join(OFFLINE_MODELS)}"
            )
        case "openai" | "anthropic":
            if not os.environ.get(_KEYS[name]):
                raise HarnessError(f"{_KEYS[name]} is not set: the {name} backend needs an API key")
            raise HarnessError(f"no API backend available yet for {name!r} (use --dry-run to render prompts)")
        case "vllm":
            return VllmBackend(config.model, config.local, seed=config.seed)
        case "hf":
            return HFBackend(config.model, config.local)
        case _:
            raise HarnessError(f"unknown backend {name!r}; choose from {', '.join(BACKENDS)}")
