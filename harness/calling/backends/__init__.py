"""One table that describes every backend, and nothing else: no registries, no helpers.

Adding a provider: one module in this folder (a LocalBackend or RemoteBackend of base.py, an API over HTTP an
HTTPBackend of provider.py, and a `from_config(config)` that builds it) and one line in BACKENDS below. What a run's
settings make of the table (which backend, its chat mode, its reasoning, building it) is harness/calling/backends/
choose.py; validation (harness/calling/validate.py, harness/variants/validate.py), pricing, --batch, reasoning
budgets, qa-embed and provenance read the line; nothing else names a backend (tests/calling/test_backend_names.py).
The modules the table names by string import nothing of it back (tests/test_layers.py counts the strings)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from harness.calling.backends.local_models import KNOWN_MODELS
from harness.calling.backends.offline import OFFLINE_MODELS


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
    # Its embedder can leave an instruction's tokens out of pooling (Request.unpooled; --case-pooling text): an
    # embeddings API pools all it is sent
    pools_text: bool = False
    key_env: str | None = None  # the environment variable holding its API key
    url: str | None = None  # the provider's own API: a run sent elsewhere is flagged (results/provenance.py)
    batch: str | None = None  # "module:Class" of its batch endpoint (--batch); None: runs one by one
    packages: tuple[str, ...] = ()  # installed packages whose versions can change its answers (config.json)
    models: tuple[str, ...] = ()  # model names that imply it (a baseline has no others)
    prefixes: tuple[str, ...] = ()  # model-name prefixes that imply it
    # The LocalOptions it uses (--data-parallel: data_parallel); another set away from its default is refused
    # (harness/calling/validate.py), never ignored
    local: tuple[str, ...] = ()

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
        local=("dtype", "tensor_parallel", "data_parallel", "gpu_memory_utilization", "max_model_len"),
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
        pools_text=True,
        packages=("transformers", "torch"),
        models=tuple(KNOWN_MODELS),  # weights shipped in a package
        local=("dtype", "batch_size"),
    ),
    "sentence-transformers": Description(
        None,
        "embedder",
        embedder="harness.calling.backends.embeddings:SentenceTransformerBackend",
        pools_text=True,
        packages=("sentence-transformers", "torch"),
        local=("batch_size", "trust_remote_code"),
    ),
}
