"""What a run's settings make of the backend table (harness/calling/backends/__init__.py BACKENDS): which backend
a model name implies, the line that describes it, its chat mode, its reasoning, the checks of what it can do, and
building it (`make_backend`, `make_embedding_backend`: the only places the table's modules are imported, each
given its line)."""

from __future__ import annotations

import difflib
import importlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, cast

from harness.calling.backends import BACKENDS, Description
from harness.calling.backends.base import Backend
from harness.calling.backends.local_models import KNOWN_MODELS
from harness.calling.backends.offline import OFFLINE_MODELS
from harness.calling.backends.thinking import Thinking, thinking_for
from harness.config.settings import CONSTRAIN_MODES, SCORINGS, RunConfig
from harness.types import HarnessError, Request


class _Builder(Protocol):
    """What each module named in BACKENDS offers: its backend built from the run's settings and its own line."""

    def from_config(self, config: RunConfig, line: Description) -> Backend: ...


def described(name: str) -> Description:
    """The backend's line of BACKENDS; an unknown name fails in one line."""
    if name not in BACKENDS:
        raise HarnessError(f"unknown backend {name!r}; choose from {', '.join(BACKENDS)}")
    return BACKENDS[name]


def constrain_backends() -> dict[str, str]:
    """Backends that can force the answer into the label scale (--constrain): name -> its mechanism."""
    return {n: d.constrain for n, d in BACKENDS.items() if d.constrain}


def backend_for(model: str, base_urls: Sequence[str] = ()) -> str:
    """The backend a model name implies; --backend overrides it. With --base-url, a name that implies
    nothing means the OpenAI-compatible server at that URL (that is what a user means)."""
    for name, d in BACKENDS.items():
        if model in d.models:
            return name
    for name, d in BACKENDS.items():
        if d.prefixes and model.startswith(d.prefixes):
            return name
    if base_urls:
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
        d = BACKENDS.get(backend_name(config))
    except HarnessError:
        return False
    return d.chat_mode(config) if d else False  # description.py: what its line says


def thinking(config: RunConfig) -> Thinking:
    """The run's reasoning settings on its backend (harness/calling/backends/thinking.py), without building it."""
    try:
        return described(backend_name(config)).reasoning(config)  # description.py: what its line says
    except HarnessError:
        api = config.api
        return thinking_for(None, config.model, api.reasoning, api.reasoning_tokens, chat_mode(config), api.base_urls)


def output_budget(config: RunConfig, request: Request) -> int:
    """What the run's backend's `output_budget` says of a request, without building it (--dry-run builds no
    backend: no key, no engine): the answer's max_tokens, and a reasoning run's thinking budget."""
    return thinking(config).max_tokens(request.max_tokens)


def check_scoring(config: RunConfig) -> None:
    """--scoring expected needs log-probabilities: refused in one line where the backend has none."""
    if config.scoring not in SCORINGS:
        raise HarnessError(f"unknown --scoring {config.scoring!r}; choose from {', '.join(SCORINGS)}")
    if config.constrain is not None:
        check_constrain(config)
    if config.scoring != "expected":
        return
    name = backend_name(config)
    if name not in BACKENDS or not BACKENDS[name].logprobs:
        giving = sorted(n for n, d in BACKENDS.items() if d.logprobs)
        raise HarnessError(
            f"--scoring expected needs the first output token's log-probabilities, which the {name} backend "
            f"does not give; use one of: {', '.join(giving)}"
        )
    if config.variant != "sentences":
        raise HarnessError("--scoring expected scores the sentence prompt: use --variant sentences")
    think = thinking(config)
    if think.on and think.combined:  # OpenAI's reasoning models
        raise HarnessError(
            f"--scoring expected: reasoning models ({config.model!r}) return no log-probabilities "
            "(and their first output token is hidden reasoning)"
        )
    if think.on:  # an open model thinks first: by name with a chat template (thinking.py), or --reasoning yes
        why = "--reasoning yes" if config.api.reasoning else "its name, with a chat template"
        raise HarnessError(
            f"--scoring expected reads the answer's first token, and {config.model!r} thinks before it answers "
            f"({why}): add --reasoning no (the template's enable_thinking: false), or use --scoring parsed"
        )


def check_constrain(config: RunConfig) -> None:
    """--constrain needs a backend that can force the answer into the scale; one protocol per run."""
    name = backend_name(config)
    if not described(name).constrain:
        raise HarnessError(
            f"--constrain: the {name} backend cannot force its answer into the label scale; "
            f"use one of: {', '.join(constrain_backends())}"
        )
    if config.constrain not in CONSTRAIN_MODES:
        raise HarnessError(f"unknown --constrain {config.constrain!r}; choose from {', '.join(CONSTRAIN_MODES)}")
    if config.constrain == "grammar" and not (name == "openai" and config.api.base_urls):
        raise HarnessError(
            "--constrain grammar sends llama.cpp's GBNF `grammar` field: it needs --base-url, a llama.cpp server"
        )
    if config.variant != "sentences":
        raise HarnessError("--constrain constrains the score of the sentence prompt: use --variant sentences")
    if config.scoring == "expected":
        raise HarnessError(
            "--constrain with --scoring expected: a constrained reply starts with its format, not the score; "
            "run them as two runs (the report sets them side by side)"
        )


def make_backend(config: RunConfig) -> Backend:
    """Build the run's backend; fails in one line before any work when it cannot be used."""
    check_scoring(config)
    name = backend_name(config)
    module = BACKENDS[name].module if name in BACKENDS else None
    if module is None:  # sentence-transformers embeds only (make_embedding_backend below)
        raise HarnessError(f"unknown backend {name!r}; choose from {', '.join(BACKENDS)}")
    builder = cast(_Builder, importlib.import_module(module))
    return builder.from_config(config, BACKENDS[name])


def make_embedding_backend(config: RunConfig) -> Backend:
    """The qa-embed variant's embedding model: its backend's `embedder` in BACKENDS (OpenAI's embeddings API or a
    compatible server; a local sentence-transformers model: `--backend sentence-transformers --model DIR`)."""
    name = backend_name(config)
    embedder = described(name).embedder
    if embedder is None:
        raise HarnessError(
            f"--variant qa-embed needs an embedding model (OpenAI: text-embedding-3-small, ...; local: "
            f"--backend sentence-transformers --model DIR), not a {name} model"
        )
    module, cls = embedder.split(":")
    builder = cast(_Builder, getattr(importlib.import_module(module), cls))
    return builder.from_config(config, described(name))
