"""Explicit wiring from a model name to a backend: one dict, one function, no registries."""

from __future__ import annotations

import os
from collections.abc import Sequence

from harness.calling.backends.base import PLACEHOLDER_KEY, Backend
from harness.calling.backends.hf import HFBackend
from harness.calling.backends.local_models import KNOWN_MODELS
from harness.calling.backends.offline import OverlapScorer, RandomScorer
from harness.calling.backends.vllm import VllmBackend
from harness.config.settings import SCORINGS, RunConfig
from harness.types import HarnessError, Request

OFFLINE_MODELS = ("random", "overlap")
BACKENDS = (
    "offline",
    "openai",
    "anthropic",
    "vllm",
    "hf",
    "sentence-transformers",
)  # vllm, hf: a hub id or local path, never implied
_KEYS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
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
    raise HarnessError(
        f"unknown model {model!r}: pass --backend ({', '.join(BACKENDS)}) to say how to reach it, "
        f"or use an offline baseline ({', '.join(OFFLINE_MODELS)}) or a packaged model ({', '.join(KNOWN_MODELS)})"
    )


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
        from harness.calling.backends.openai import default_chat

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
    from harness.calling.backends import openai

    reasoning = config.api.reasoning if config.api.reasoning is not None else openai.is_reasoning_model(config.model)
    return openai.output_budget(request, reasoning, config.api.reasoning_tokens)


def _api_key(backend: str, base_urls: tuple[str, ...]) -> str:
    """The key from the environment; a placeholder only for a server of your own (--base-url)."""
    key = os.environ.get(_KEYS[backend], "").strip()
    if key:
        return key
    if base_urls:
        return PLACEHOLDER_KEY  # vllm serve, llama.cpp & co. accept any key unless started with one
    raise HarnessError(f"{_KEYS[backend]} is not set: the {backend} backend needs an API key")


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
    expected = config.scoring == "expected"
    match name:
        case "offline":
            if config.model == "random":
                return RandomScorer()
            if config.model == "overlap":
                return OverlapScorer(label_range=label_range)
            raise HarnessError(
                f"offline backend has no model {config.model!r}; choose from {', '.join(OFFLINE_MODELS)}"
            )
        case "openai":
            from harness.calling.backends.openai import OpenAIBackend

            api = config.api
            backend = OpenAIBackend(
                config.model,
                _api_key(name, api.base_urls),
                api.base_urls,
                timeout=api.timeout,
                reasoning=api.reasoning,
                reasoning_tokens=api.reasoning_tokens,
                reasoning_effort=api.reasoning_effort,
                chat=config.chat,
                stop=config.stop,
                max_tokens=config.max_tokens,
            )
            if api.base_urls:
                backend.check_model()  # a server that lists its models must list this one
            return backend
        case "anthropic":
            from harness.calling.backends.anthropic import AnthropicBackend

            api = config.api
            return AnthropicBackend(
                config.model,
                _api_key(name, api.base_urls),
                api.base_urls,
                timeout=api.timeout,
                greedy=api.anthropic_greedy,
                chat=config.chat,
                stop=config.stop,
                max_tokens=config.max_tokens,
            )
        case "vllm":
            return VllmBackend(config.model, config.local, seed=config.seed, expected=expected)
        case "hf":
            return HFBackend(config.model, config.local, expected=expected)
        case _:
            raise HarnessError(f"unknown backend {name!r}; choose from {', '.join(BACKENDS)}")


def make_embedding_backend(config: RunConfig) -> Backend:
    """The qa-embed variant's embedding model: OpenAI's embeddings API (or a compatible server), or a local
    sentence-transformers model (`--backend sentence-transformers --model DIR`)."""
    name = backend_name(config)
    match name:
        case "openai":
            from harness.calling.backends.embeddings import OpenAIEmbeddingBackend

            api = config.api
            return OpenAIEmbeddingBackend(
                config.model, _api_key(name, api.base_urls), api.base_urls, timeout=api.timeout
            )
        case "sentence-transformers" | "hf":
            from harness.calling.backends.embeddings import SentenceTransformerBackend

            return SentenceTransformerBackend(config.model, config.local.batch_size)
        case _:
            raise HarnessError(
                f"--variant qa-embed needs an embedding model (OpenAI: text-embedding-3-small, ...; local: "
                f"--backend sentence-transformers --model DIR), not a {name} model"
            )
