"""Explicit wiring from a model name to a backend: one table that describes every backend, no registries.

Adding a provider: one module in this folder (a LocalBackend or RemoteBackend of base.py, an API over HTTP an
HTTPBackend of provider.py, and a `from_config(config)` that builds it) and one line in BACKENDS below. Validation
(harness/calling/validate.py, harness/variants/validate.py), pricing, --batch, reasoning budgets, qa-embed and
provenance read the line; nothing else names a backend (tests/calling/test_backend_names.py)."""

from __future__ import annotations

import difflib
import importlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol, cast

from harness.calling.backends.base import Backend, Decoding, api_key
from harness.calling.backends.local_models import KNOWN_MODELS
from harness.calling.backends.offline import OFFLINE_MODELS
from harness.calling.backends.thinking import Thinking, thinking_for
from harness.config.settings import CONSTRAIN_MODES, SCORINGS, RunConfig
from harness.types import HarnessError, Request


@dataclass(frozen=True)
class Description:
    """What the rest of the harness knows of one backend, checked and priced without building it."""

    module: str | None  # builds it (`from_config(config)`), imported only when used; None: embeddings only
    # api: a priced remote API (--max-cost, an API key, retries); engine: a language model run here; baseline:
    # an offline scorer, not a language model (no template, no stop sequences, no answers); embedder: embeds only
    kind: Literal["api", "engine", "baseline", "embedder"]
    # How a prompt goes out. only: one chat message, always (--no-chat refused); openai-names: chat at the provider
    # and for OpenAI's model names, raw text to other models on --base-url servers; template: raw text unless
    # --chat applies the model's chat template; none: the prompt is read as text, nothing to choose.
    chat: Literal["only", "openai-names", "template", "none"] = "none"
    stop: bool = False  # sends --stop sequences
    logprobs: bool = False  # gives the first output token's top log-probabilities (--scoring expected)
    constrain: str | None = None  # how it forces the answer into the label scale (--constrain); None: it cannot
    # Whether a model thinks before answering (thinking.py): openai-names: OpenAI's reasoning models by name (one cap
    # for thought and answer), open models' names elsewhere; when-asked: only with --reasoning yes (Claude's
    # extended thinking); by-name: an open model's name, with a chat template; None: never
    thinking: Literal["openai-names", "when-asked", "by-name"] | None = None
    truncates: bool = False  # cuts a prompt over the model's context (--truncate-input)
    samples: bool = True  # decodes at a --temperature above 0 (hf: greedy only)
    embedder: str | None = None  # "module:Class" that embeds the qa-embed variant's answers; None: it cannot
    key_env: str | None = None  # the environment variable holding its API key
    url: str | None = None  # the provider's own API: a run sent elsewhere is flagged (results/provenance.py)
    batch: str | None = None  # "module:Class" of its batch endpoint (--batch); None: runs one by one
    packages: tuple[str, ...] = ()  # installed packages whose versions can change its answers (config.json)
    models: tuple[str, ...] = ()  # model names that imply it (a baseline has no others)
    prefixes: tuple[str, ...] = ()  # model-name prefixes that imply it

    @property
    def remote(self) -> bool:
        """An API: priced per token by the model's entry in the price table (harness/calling/pricing.py)."""
        return self.kind == "api"


# One entry per backend: its --backend name -> its description. vllm, hf, sentence-transformers: --model a hub id
# or a local path.
BACKENDS: dict[str, Description] = {
    "offline": Description("harness.calling.backends.offline", "baseline", models=OFFLINE_MODELS),
    "openai": Description(
        "harness.calling.backends.openai",
        "api",
        chat="openai-names",
        stop=True,
        logprobs=True,  # hosted chat models' top_logprobs, and OpenAI-compatible servers that return logprobs
        constrain="response_format json_schema (strict)",
        thinking="openai-names",
        embedder="harness.calling.backends.embeddings:OpenAIEmbeddingBackend",
        key_env="OPENAI_API_KEY",
        url="https://api.openai.com/v1",
        batch="harness.calling.batch.openai:OpenAIBatches",
        packages=("openai",),
        prefixes=("gpt-", "o1", "o3", "o4", "chatgpt", "text-"),
    ),
    "anthropic": Description(
        "harness.calling.backends.anthropic",
        "api",
        key_env="ANTHROPIC_API_KEY",
        url="https://api.anthropic.com",
        chat="only",
        stop=True,
        constrain="a forced tool call with an integer field",
        thinking="when-asked",
        batch="harness.calling.batch.anthropic:AnthropicBatches",
        packages=("anthropic",),
        prefixes=("claude",),
    ),
    "vllm": Description(
        "harness.calling.backends.vllm",
        "engine",
        chat="template",
        logprobs=True,
        constrain="structured outputs: a choice over the scale",
        thinking="by-name",
        packages=("vllm", "transformers", "torch"),
    ),
    "hf": Description(
        "harness.calling.backends.hf",
        "engine",
        chat="template",
        logprobs=True,
        constrain="the first output token restricted to the scale's tokens",
        thinking="by-name",
        truncates=True,
        samples=False,  # hf_steps.py: greedy generate only
        embedder="harness.calling.backends.embeddings:SentenceTransformerBackend",  # its directory, loaded as one
        packages=("transformers", "torch"),
        models=tuple(KNOWN_MODELS),  # weights shipped in a package
    ),
    "sentence-transformers": Description(
        None,
        "embedder",
        embedder="harness.calling.backends.embeddings:SentenceTransformerBackend",
        packages=("sentence-transformers", "torch"),
    ),
}


class _Builder(Protocol):
    """What each module named in BACKENDS offers."""

    def from_config(self, config: RunConfig) -> Backend: ...


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


def constrain_scale(config: RunConfig) -> tuple[int, ...] | None:
    """--constrain: the integers of the dataset's label scale the answer is forced into; None without it."""
    if config.constrain is None:
        return None
    from harness.datasets.load import LABEL_RANGES  # here: the data's decryption stays out of `--help`
    from harness.scoring.constrained import scale_values

    return scale_values(LABEL_RANGES[config.dataset])


def decoding(config: RunConfig) -> Decoding:
    """The run's decoding section as a remote backend sends it: --chat, --stop, --max-tokens, --scoring, --constrain."""
    return Decoding(
        config.chat, config.stop, config.max_tokens, config.scoring == "expected", constrain_scale(config),
        config.constrain == "grammar",
    )  # fmt: skip


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
    match d.chat if d else "none":
        case "only":
            return True
        case "openai-names":
            from harness.calling.backends.openai_names import default_chat  # not .openai: no SDK for a name rule

            return default_chat(config.model, config.api.base_urls)
        case _:
            return False


def thinking(config: RunConfig) -> Thinking:
    """The run's reasoning settings on its backend (harness/calling/backends/thinking.py), without building it."""
    try:
        style = described(backend_name(config)).thinking
    except HarnessError:
        style = None
    api = config.api
    return thinking_for(style, config.model, api.reasoning, api.reasoning_tokens, chat_mode(config), api.base_urls)


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
    if module is None:  # sentence-transformers embeds only (embeddings.py make_embedding_backend)
        raise HarnessError(f"unknown backend {name!r}; choose from {', '.join(BACKENDS)}")
    builder = cast(_Builder, importlib.import_module(module))
    return builder.from_config(config)


def backend_key(name: str, base_urls: Sequence[str]) -> str:
    """The API key of a remote backend (its `key_env` variable); a placeholder for a server of your own."""
    variable = BACKENDS[name].key_env
    assert variable is not None, f"backend {name} has no key_env in BACKENDS"
    return api_key(variable, name, base_urls)
