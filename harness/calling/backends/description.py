"""What a backend is, for the table of backends (harness/calling/backends/__init__.py BACKENDS) and the modules it
names: its line (`Description`), and what a line makes of a run's settings. A module the table names is built from
its own line (`from_config(config, line)`), so it imports this module, never the table (tests/test_layers.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from harness.calling.backends.base import Decoding
from harness.calling.backends.openai_names import default_chat  # not .openai: no SDK for a name rule
from harness.calling.backends.thinking import Rule, Thinking, thinking_for
from harness.config.settings import RunConfig


@dataclass(frozen=True)
class Description:
    """What the rest of the harness knows of one backend, checked and priced without building it."""

    module: str | None  # builds it (`from_config(config, line)`), imported only when used; None: embeddings only
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
    thinking: Rule | None = None
    truncates: bool = False  # cuts a prompt over the model's context (--truncate-input)
    samples: bool = True  # decodes at a --temperature above 0 (hf: greedy only)
    embedder: str | None = None  # "module:Class" that embeds the qa-embed variant's answers; None: it cannot
    # Its embedder can leave an instruction's tokens out of pooling (Request.unpooled; --case-pooling text): an
    # embeddings API pools all it is sent
    pools_text: bool = False
    key_env: str | None = None  # the environment variable holding its API key
    # The variable its SDK reads a base URL from without --base-url; read and checked as --base-url is (base.py
    # env_base_url), so that its query goes apart as --base-url's does
    url_env: str | None = None
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

    def chat_mode(self, config: RunConfig) -> bool:
        """Whether prompts go out as a chat message (--chat / --no-chat, else this backend's default): hosted APIs
        (and OpenAI's model names anywhere) are chat; OpenAI-compatible servers and local engines get raw text,
        as the paper sent open models."""
        if config.chat is not None:
            return config.chat
        match self.chat:
            case "only":
                return True
            case "openai-names":
                return default_chat(config.model, config.api.base_urls)
            case _:
                return False

    def reasoning(self, config: RunConfig) -> Thinking:
        """The run's reasoning settings on this backend (thinking.py), without building it."""
        api = config.api
        return thinking_for(
            self.thinking, config.model, api.reasoning, api.reasoning_tokens, self.chat_mode(config), api.base_urls
        )


def constrain_scale(config: RunConfig) -> tuple[int, ...] | None:
    """--constrain: the integers of the dataset's label scale the answer is forced into; None without it."""
    if config.constrain is None:
        return None
    from harness.datasets.choose import describe_dataset
    from harness.scoring.constrained import scale_values

    return scale_values(describe_dataset(config.dataset).label_range)


def decoding(config: RunConfig) -> Decoding:
    """The run's decoding section as a remote backend sends it: --chat, --stop, --max-tokens, --scoring, --constrain."""
    return Decoding(
        config.chat, config.stop, config.max_tokens, config.scoring == "expected", constrain_scale(config),
        config.constrain == "grammar",
    )  # fmt: skip
