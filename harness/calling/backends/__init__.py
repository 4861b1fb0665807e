"""Explicit wiring from a model name to a backend: one dict, one function, no registries.

Adding a provider: one module in this folder (a LocalBackend or RemoteBackend of base.py, and a
`from_config(config, label_range)` that builds it) and one line in BUILDERS below."""

from __future__ import annotations

import difflib
import importlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, cast

from harness.calling.backends.base import Backend, api_key
from harness.calling.backends.local_models import KNOWN_MODELS
from harness.calling.backends.offline import OFFLINE_MODELS
from harness.config.settings import SCORINGS, RunConfig
from harness.types import HarnessError, Request

# One line per provider: its --backend name -> the module that builds it, imported only when used (an SDK or
# an engine loads with it). vllm, hf: --model a hub id or local path, never implied by a name.
BUILDERS = {
    "offline": "harness.calling.backends.offline",
    "openai": "harness.calling.backends.openai",
    "anthropic": "harness.calling.backends.anthropic",
    "vllm": "harness.calling.backends.vllm",
    "hf": "harness.calling.backends.hf",
}
BACKENDS = (*BUILDERS, "sentence-transformers")  # sentence-transformers: qa-embed's embeddings only


class _Builder(Protocol):
    """What each module named in BUILDERS offers."""

    def from_config(self, config: RunConfig, label_range: tuple[float, float]) -> Backend: ...


# Backends that return the first output position's log-probabilities for --scoring expected.
EXPECTED_SCORING_BACKENDS = ("hf", "vllm")


def backend_for(model: str, base_urls: Sequence[str] = ()) -> str:
    """The backend a model name implies; --backend overrides it. With --base-url, a name that implies
    nothing means the OpenAI-compatible server at that URL (that is what a user means)."""
    if model in OFFLINE_MODELS:
        return "offline"
    if model in KNOWN_MODELS:  # weights shipped in a Python package (harness/calling/backends/local_models.py)
        return "hf"
    if model.startswith("claude"):
        return "anthropic"
    if model.startswith(("gpt-", "o1", "o3", "o4", "chatgpt", "text-")) or base_urls:
        return "openai"
    close = difflib.get_close_matches(model.lower(), known_model_names(), n=1, cutoff=0.7)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise HarnessError(
        f"unknown model {model!r}: {hint}pass --backend ({', '.join(BACKENDS)}) to say how to reach it, "
        f"or use an offline baseline ({', '.join(OFFLINE_MODELS)}) or a packaged model ({', '.join(KNOWN_MODELS)})"
    )


def known_model_names() -> list[str]:
    """Names a typo is matched against: baselines, packaged models and the package price table's API models."""
    # harness/calling/pricing.py PRICES_FILE, read here without importing pricing (it imports this package)
    priced = json.loads((Path(__file__).parents[2] / "data" / "prices.json").read_text(encoding="utf-8"))["models"]
    return [*OFFLINE_MODELS, *KNOWN_MODELS, *priced]


def backend_name(config: RunConfig) -> str:
    """The run's backend: --backend, else what the model name (and --base-url) implies."""
    return config.backend or backend_for(config.model, config.api.base_urls)


def chat_mode(config: RunConfig) -> bool:
    """Whether prompts go out as a chat message (--chat / --no-chat, else the backend's default): hosted APIs
    (and OpenAI's model names anywhere) are chat; OpenAI-compatible servers and local engines get raw text,
    as the paper sent open models."""
    if config.chat is not None:
        return config.chat
    try:
        name = backend_name(config)
    except HarnessError:
        return False
    if name == "openai":
        from harness.calling.backends.openai_names import default_chat  # not .openai: no SDK for a name rule

        return default_chat(config.model, config.api.base_urls)
    return name == "anthropic"


def output_budget(config: RunConfig, request: Request) -> int:
    """What the run's backend's `output_budget` says of a request, without building it (--dry-run builds no
    backend: no key, no engine): the openai backend's own rule; every other backend bills at most max_tokens."""
    try:
        name = backend_name(config)
    except HarnessError:
        return request.max_tokens
    if name != "openai":
        return request.max_tokens
    from harness.calling.backends import openai_names  # not .openai: a dry run imports no SDK

    reasoning = config.api.reasoning
    if reasoning is None:
        reasoning = openai_names.is_reasoning_model(config.model)
    return openai_names.output_budget(request, reasoning, config.api.reasoning_tokens)


def check_scoring(config: RunConfig) -> None:
    """--scoring expected needs log-probabilities: refused in one line where the backend has none."""
    if config.scoring not in SCORINGS:
        raise HarnessError(f"unknown --scoring {config.scoring!r}; choose from {', '.join(SCORINGS)}")
    if config.scoring != "expected":
        return
    name = backend_name(config)
    if name not in EXPECTED_SCORING_BACKENDS:
        raise HarnessError(
            f"--scoring expected needs the first output token's log-probabilities, which the {name} backend "
            f"does not give; use one of: {', '.join(EXPECTED_SCORING_BACKENDS)}"
        )
    if config.variant != "sentences":
        raise HarnessError("--scoring expected scores the sentence prompt: use --variant sentences")


def make_backend(config: RunConfig, label_range: tuple[float, float]) -> Backend:
    """Build the run's backend; fails in one line before any work when it cannot be used."""
    check_scoring(config)
    name = backend_name(config)
    if name not in BUILDERS:
        raise HarnessError(f"unknown backend {name!r}; choose from {', '.join(BACKENDS)}")
    builder = cast(_Builder, importlib.import_module(BUILDERS[name]))
    return builder.from_config(config, label_range)


def make_embedding_backend(config: RunConfig) -> Backend:
    """The qa-embed variant's embedding model: OpenAI's embeddings API (or a compatible server), or a local
    sentence-transformers model (`--backend sentence-transformers --model DIR`)."""
    name = backend_name(config)
    match name:
        case "openai":
            from harness.calling.backends.embeddings import OpenAIEmbeddingBackend

            api = config.api
            return OpenAIEmbeddingBackend(
                config.model, api_key("OPENAI_API_KEY", name, api.base_urls), api.base_urls, timeout=api.timeout
            )
        case "sentence-transformers" | "hf":
            from harness.calling.backends.embeddings import SentenceTransformerBackend

            return SentenceTransformerBackend(config.model, config.local.batch_size)
        case _:
            raise HarnessError(
                f"--variant qa-embed needs an embedding model (OpenAI: text-embedding-3-small, ...; local: "
                f"--backend sentence-transformers --model DIR), not a {name} model"
            )
