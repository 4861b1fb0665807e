"""One table that describes every backend, and nothing else: no registries, no helpers.

Adding a provider: one module in this folder (a LocalBackend or RemoteBackend of base.py, an API over HTTP an
HTTPBackend of provider.py, and a `from_config(config, line)` that builds it from the run's settings and its line)
and one line in BACKENDS below (a line's shape: description.py). What a run's settings make of the table (which
backend, its chat mode, its reasoning, building it) is harness/calling/backends/choose.py; validation
(harness/calling/validate.py, harness/variants/validate.py), pricing, --batch, reasoning budgets, qa-embed and
provenance read the line; nothing else names a backend (tests/calling/test_backend_names.py).
The modules the table names by string import nothing of it back (tests/test_layers.py counts the strings): each is
given its own line when built."""

from __future__ import annotations

from harness.calling.backends.description import Description
from harness.calling.backends.local_models import KNOWN_MODELS
from harness.calling.backends.offline import OFFLINE_MODELS

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
        url_env="OPENAI_BASE_URL",
        url="https://api.openai.com/v1",
        batch="harness.calling.batch.openai:OpenAIBatches",
        packages=("openai",),
        prefixes=("gpt-", "o1", "o3", "o4", "chatgpt", "text-"),
    ),
    "anthropic": Description(
        "harness.calling.backends.anthropic",
        "api",
        key_env="ANTHROPIC_API_KEY",
        url_env="ANTHROPIC_BASE_URL",
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
