"""RunConfig's option groups, each field with its option (harness/config/option.py): how API backends are reached
and --batch, how local GPU backends run a model, and the embedding protocol of --variant case. No keys here."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from harness.config.checks import at_least, finite, http_urls, regular_file, share
from harness.config.option import Affects, option, switch

DTYPES = ("auto", "float32", "float16", "bfloat16")  # weights and activations (auto: the checkpoint's)
API = "API backends (openai, anthropic, OpenAI-compatible servers)"
LOCAL = "local GPU backends (vllm, hf)"
CASE = "embedding protocol (--variant case, Zhang et al. 2025)"
# --variant case's choices (harness/variants/case.py, case_inputs.py read them from here)
CASE_SETTINGS = ("cond-c", "cond", "sent-c", "sent", "plain")  # Zhang et al. 2025, Table 1; plain: the sentence alone
CASE_INPUTS = ("instruct", "concat")
CASE_FFNS = ("none", "linear", "nonlinear")
CASE_POOLINGS = ("text", "whole")  # Zhang et al. 2025 §3.1: the encoded text's tokens only; or every token


@dataclass(frozen=True)
class BatchOptions:
    """--batch: what the cache cannot answer goes through the provider's batch endpoint (harness/batch)."""

    wait: float | None = option(
        None,
        "--batch: seconds to wait for results (default: until they end); 0: submit and exit with status 4",
        metavar="S",
        check=finite(),
        affects=Affects.OPERATION,
    )
    poll: float = option(
        60.0,
        "--batch: seconds between status checks",
        metavar="S",
        check=finite(positive=True),
        affects=Affects.OPERATION,
    )
    max_requests: int | None = option(
        None,
        "--batch: requests per batch (default: provider's limit)",
        metavar="N",
        check=at_least(1),
        affects=Affects.OPERATION,
    )
    # When this invocation began: a request that failed in a batch since then is an error until the next run.
    started: float = field(default_factory=time.time)


@dataclass(frozen=True)
class ApiOptions:
    """How API backends (openai, anthropic, OpenAI-compatible servers) are reached, and the cache."""

    base_urls: tuple[str, ...] = option(
        (),
        "OpenAI-compatible server URL, e.g. http://127.0.0.1:8000/v1; repeatable, spreads the load "
        "(default: the provider's)",
        flag="--base-url",
        check=http_urls,
        affects=Affects.REQUEST,
    )
    # A ceiling: 429s shrink the window (calling/limiter.py)
    concurrency: int = option(
        128,
        "the most API requests in flight; 429s shrink it while the provider is at its limit, then it grows back",
        check=at_least(1),
        affects=Affects.OPERATION,
    )
    rpm: float | None = option(
        None,
        "pace API requests to this many a minute (default: as the provider says)",
        check=finite(positive=True),
        affects=Affects.OPERATION,
    )
    tpm: float | None = option(
        None,
        "pace prompt tokens to this many a minute (default: as the provider says)",
        check=finite(positive=True),
        affects=Affects.OPERATION,
    )
    timeout: float = option(
        120.0, "seconds per attempt before it is retried", check=finite(positive=True), affects=Affects.OPERATION
    )
    max_retries: int = option(
        8, "retries per request on 408/409/429/5xx/529/timeouts", check=at_least(0), affects=Affects.OPERATION
    )
    wait_for_server: float = option(
        10.0,
        "how long to keep trying a server that has not answered yet (refused, unreachable) before the run "
        "stops (default %(default)g; longer for a server that is still starting)",
        metavar="SECONDS",
        check=finite(),
        affects=Affects.OPERATION,
    )
    max_reply_mb: float = option(  # decompressed (calling/backends/transport.py)
        32.0,
        "the most MB of one API reply's body read, after decompression (default %(default)g); a larger "
        "answer is kept as malformed, reason too-large",
        metavar="MB",
        check=finite(positive=True),
        affects=Affects.READING,
    )
    cache: Path | None = option(
        None, "response cache file (default: RESULTS_DIR/cache.sqlite)", affects=Affects.OPERATION
    )
    no_cache: bool = option(False, "neither read nor write the response cache", affects=Affects.OPERATION)
    refresh: bool = option(False, "ignore cached answers; send again and store the new ones", affects=Affects.OPERATION)
    max_cost: float | None = option(
        None,
        "US dollars this run may spend; stops sending before that (default: no limit)",
        check=finite(),
        affects=Affects.OPERATION,
    )
    prices: Path | None = option(
        None,
        "JSON price table (default: harness/data/prices.json)",
        check=regular_file("price table"),
        affects=Affects.PRESENTATION,
    )
    reasoning: bool | None = option(  # None: from the model name (o1, o3, o4, gpt-5 ...)
        None,
        "a reasoning model: a thinking budget beside the answer's (OpenAI: max_completion_tokens, no "
        "temperature; Anthropic: extended thinking; open models: a total budget and the chat template's "
        "enable_thinking). auto: by name (OpenAI's o-series and gpt-5; with --chat, Qwen3, DeepSeek-R1, gpt-oss, "
        "QwQ ...); Claude thinks only with yes",
        words=(("auto", None), ("yes", True), ("no", False)),
        affects=Affects.REQUEST | Affects.PUBLISHED,
    )
    reasoning_tokens: int = option(
        2048,
        "the thinking budget: OpenAI's max_completion_tokens (reasoning plus the answer); Anthropic's "
        "budget_tokens (min 1024) and open models' thought, each with --max-tokens more for the answer",
        check=at_least(1),
        affects=Affects.REQUEST,
    )
    reasoning_effort: str | None = option(
        None,
        "reasoning_effort for reasoning models, e.g. low (default: not sent)",
        affects=Affects.REQUEST,
    )
    anthropic_greedy: bool = option(
        False,
        "temperature 0 via API version 2023-06-01 (models that still allow it); default: the model's sampling",
        affects=Affects.REQUEST | Affects.PUBLISHED,
    )
    # None: one request at a time (harness/calling/dispatch.py)
    batch: BatchOptions | None = switch(
        BatchOptions,
        "send uncached requests through the provider's batch endpoint (50%% off)",
        prefix="batch-",
        affects=Affects.OPERATION,
    )


@dataclass(frozen=True)
class LocalOptions:
    """How local GPU backends (vllm, hf) load and run a model."""

    dtype: str = option(
        "auto",
        "weights and activations (auto: the checkpoint's)",
        choices=DTYPES,
        affects=Affects.REQUEST,
    )
    tensor_parallel: int = option(
        1, "vllm: split the model over N GPUs", metavar="N", check=at_least(1), affects=Affects.OPERATION
    )
    data_parallel: int = option(
        1,
        "vllm: N engine copies (vLLM's offline data-parallel ranks), each answering its part of the prompts",
        metavar="N",
        check=at_least(1),
        affects=Affects.OPERATION,
    )
    gpu_memory_utilization: float = option(
        0.9, "vllm: share of GPU memory, in (0, 1]", metavar="F", check=share, affects=Affects.OPERATION
    )
    max_model_len: int | None = option(
        None,
        "vllm: context length (default: the model's)",
        metavar="N",
        check=at_least(1),
        affects=Affects.REQUEST,
    )
    batch_size: int | None = option(
        None,
        "hf: prompts per batch (default: chosen to fit memory)",
        metavar="N",
        check=at_least(1),
        affects=Affects.OPERATION,
    )
    trust_remote_code: bool = option(  # NV-Embed-v2, the CASE paper's best encoder, pools in its own code
        False,
        "sentence-transformers: run the Python code a model folder ships (its own modelling or pooling code); "
        "only for a folder you trust",
        affects=Affects.REQUEST,
    )


@dataclass(frozen=True)
class EmbedOptions:
    """--variant case (Zhang et al. 2025, harness/variants/case.py): how sentences and conditions are embedded."""

    setting: str | None = option(
        None,
        "the encoding whose cosines are the predictions: cond-c, cond, sent-c, sent (Zhang et al. 2025, "
        "Table 1) or plain (the sentence alone); every setting is in metrics.json (default: cond-c; STS-B: plain)",
        metavar="NAME",
        choices=CASE_SETTINGS,
        affects=Affects.READING | Affects.PUBLISHED,
    )
    inputs: str = option(
        "instruct",
        "instruct: the paper's instructions for LLM encoders; concat: condition and sentence concatenated, "
        "as for its MLM encoders",
        metavar="STYLE",
        choices=CASE_INPUTS,
        affects=Affects.REQUEST | Affects.PUBLISHED,
    )
    pooling: str = option(  # §3.1: "the token embeddings of c are aggregated"; the instruction only steers attention
        "text",
        "text: pool only the encoded text's tokens (the condition's in cond), the instruction left out, as the "
        "paper does (a local sentence-transformers model; an embeddings API pools what it is sent); whole: every "
        "token of the instruction and the text",
        metavar="MODE",
        choices=CASE_POOLINGS,
        affects=Affects.REQUEST | Affects.PUBLISHED,
    )
    ffn: str = option(  # the CASE projection (§3.2)
        "none",
        "none, linear or nonlinear: train the CASE projection on the C-STS train split, epoch chosen on "
        "validation, and score with it",
        metavar="KIND",
        choices=CASE_FFNS,
        affects=Affects.READING | Affects.PUBLISHED,
    )
    ffn_dim: int = option(  # Zhang et al. 2025, Table 3: 512
        512, "projected dimensions", metavar="N", check=at_least(1), affects=Affects.READING | Affects.PUBLISHED
    )
    ffn_epochs: int = option(
        100,
        "training epochs (the best kept)",
        metavar="N",
        check=at_least(1),
        affects=Affects.READING | Affects.PUBLISHED,
    )
