"""Every setting of a run with its default: RunConfig and its option groups. Flows one way:
argparse (harness/cli/options.py, which takes its defaults from here) -> RunConfig -> runner.run()."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class BatchOptions:
    """--batch: what the cache cannot answer goes through the provider's batch endpoint (harness/batch)."""

    wait: float | None = None  # seconds to wait for results; None: until every batch ends; 0: submit and exit
    poll: float = 60.0  # seconds between status checks
    max_requests: int | None = None  # per batch; None: the provider's own limit
    # When this invocation began: a request that failed in a batch since then is an error until the next run.
    started: float = field(default_factory=time.time)


@dataclass(frozen=True)
class ApiOptions:
    """How API backends (openai, anthropic, OpenAI-compatible servers) are reached, and the cache. No keys here."""

    base_urls: tuple[str, ...] = ()  # several: the load is spread across them
    concurrency: int = 128  # the most requests in flight: a ceiling; 429s shrink the window (calling/limiter.py)
    rpm: float | None = None  # pace requests to this many a minute (None: as the provider's headers say)
    tpm: float | None = None  # pace prompt tokens to this many a minute
    timeout: float = 120.0  # seconds per attempt
    max_retries: int = 8
    wait_for_server: float = 10.0  # seconds to wait for a server that has not answered yet (refused, unreachable)
    max_reply_mb: float = 32.0  # the most MB of one reply body read, decompressed (calling/backends/transport.py)
    cache: Path | None = None  # None: <results_dir>/cache.sqlite
    no_cache: bool = False
    refresh: bool = False  # ignore stored answers (and store the new ones)
    max_cost: float | None = None  # US dollars this invocation may spend
    prices: Path | None = None  # a JSON price table overriding the package's
    reasoning: bool | None = None  # None: from the model name (o1, o3, o4, gpt-5 ...)
    reasoning_tokens: int = 2048  # max_completion_tokens for reasoning models (reasoning + answer)
    reasoning_effort: str | None = None
    anthropic_greedy: bool = False  # temperature 0 on API version 2023-06-01, where the model allows it
    batch: BatchOptions | None = None  # None: one request at a time (harness/calling/dispatch.py)


@dataclass(frozen=True)
class LocalOptions:
    """How local GPU backends (vllm, hf) load and run a model."""

    dtype: str = "auto"  # one of DTYPES
    tensor_parallel: int = 1  # vllm: GPUs one model is split over
    data_parallel: int = 1  # vllm: engine copies (vLLM's data-parallel ranks), each with its part of the prompts
    gpu_memory_utilization: float = 0.9  # vllm: share of each GPU the engine may take
    max_model_len: int | None = None  # vllm: context length (None: the model's own)
    batch_size: int | None = None  # hf: prompts per generate call (None: chosen to fit memory)


@dataclass(frozen=True)
class EmbedOptions:
    """--variant case (Zhang et al. 2025, harness/variants/case.py): how sentences and conditions are embedded."""

    setting: str | None = None  # the samples' prediction: cond-c, cond, sent-c, sent, plain (None: cond-c; STS-B plain)
    inputs: str = "instruct"  # instruct (LLM encoders' prompts) or concat (MLM encoders: CONC(c+s))
    ffn: str = "none"  # none, linear, nonlinear: the CASE projection (§3.2) trained on the C-STS train split
    ffn_dim: int = 512  # Zhang et al. 2025, Table 3: 512 dimensions
    ffn_epochs: int = 100  # the best epoch on the validation split is kept


# The values RunConfig's choice fields take (validate.py checks them; options.py offers them).
PARSE_MODES = ("first-number", "strict")
SHOT_SAMPLERS = ("seeded", "reference")
SCORINGS = ("parsed", "expected")
# --constrain: native (each backend's own mechanism) or grammar (llama.cpp servers' GBNF `grammar` field)
CONSTRAIN_MODES = ("native", "grammar")
DTYPES = ("auto", "float32", "float16", "bfloat16")  # weights and activations (auto: the checkpoint's)


@dataclass(frozen=True)
class RunConfig:
    """Every setting of one run. Flows one way: argparse -> RunConfig -> runner.run()."""

    model: str
    dataset: str = "csts"
    split: str = "validation"
    shots: int = 0
    instr: str = "none"
    template: str | None = None  # None: derived from dataset + instr
    backend: str | None = None  # None: chosen from the model name
    seed: int = 0
    limit: int | None = None  # evaluate the first N queries only
    # --shard K/N: the K-th of N deterministic parts of the queries (positions K-1, K-1+N, ...; 1-based K), for a
    # job array; `report` merges the parts (harness/results/shards.py). None: every query.
    shard: tuple[int, int] | None = None
    labels: str = "original"  # or "reannotated" (Tu et al. 2024, C-STS validation)
    variant: str = "sentences"  # "qa": score answers (Tu et al. 2024 Fig. 9); "qa-embed": cosine of answer embeddings
    answer_model: str | None = None  # qa variants: the model answering the questions (default: --model)
    answer_backend: str | None = None
    answers: Path | None = None  # reuse answers.jsonl from an earlier run
    subset: str = "all"  # or "reannotated-train" / "reannotated-test" (seeded 70/30 split)
    subset_seed: int = 0
    data_dir: Path | None = None
    archive: Path | None = None
    password_file: Path | None = None  # the path only: the password itself is never stored
    results_dir: Path = Path("results")
    run_id: str | None = None
    dry_run: bool = False
    progress: bool = True
    api: ApiOptions = field(default_factory=ApiOptions)
    local: LocalOptions = field(default_factory=LocalOptions)
    embed: EmbedOptions = field(default_factory=EmbedOptions)  # --variant case only
    # --chat / --no-chat; None: the backend's default: raw text for local engines and OpenAI-compatible servers
    # (as the paper sent open models), chat for hosted OpenAI and Anthropic (chat-only).
    chat: bool | None = None
    stop: tuple[str, ...] = ()  # stop sequences (default none: the paper's protocol)
    max_tokens: int = 20  # output budget of each scoring request (Deshpande et al. 2023, App. A.3: 20)
    shot_sampler: str = "seeded"  # "seeded" (per query) or "reference" (the published script's one stream)
    scoring: str = "parsed"  # "parsed" (the paper's first number) or "expected" (from log-probabilities)
    # --constrain [native|grammar]: the backend forces the answer into the label scale (harness/scoring/constrained.py),
    # a protocol of its own whose numbers are never set against the paper's; None: the reply as the model wrote it.
    constrain: str | None = None
    parse: str = "first-number"  # "strict" adds a second metric set (spearman_strict, ...); never replaces it
    shot_seed: int | None = None  # None: --seed for "seeded", 42 for "reference" (run_sts_fewshot.py's default)
    # --truncate-input: prompt tokens the hf backend keeps; "paper": 512 for the T5 family as the reference code's
    # tokenizer (truncation=True) cut them, none otherwise (harness/config/paper.py); None: the whole prompt.
    truncate_input: str | None = None
    # Inline thought delimiters split off before parsing (harness/scoring/reasoning.py parse_tags): "auto" (every
    # known format), "none", or a comma list of format names and "OPEN CLOSE" pairs.
    think_tags: str = "auto"
    config_file: str | None = None  # --config: the TOML file or recipe these settings came from (with the command line)
