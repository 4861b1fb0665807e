"""Every check of a RunConfig in one place, run first by real runs, dry runs and every sweep cell alike.

A dry run therefore refuses exactly what a real run refuses, with the same message. What it does not
check is what only sending needs: an API key in the environment and an installed engine (vllm,
transformers), so a dry run can price a run on a machine that will not send it. Templates and data are
checked when they are read (prompts.py, data.py), also before any request.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from harness.calling.backends import BACKENDS, OFFLINE_MODELS, backend_for, check_scoring
from harness.calling.pricing import price_for
from harness.config.settings import PARSE_MODES, SCORINGS, SHOT_SAMPLERS, VARIANTS, RunConfig
from harness.inputs import check_regular
from harness.types import HarnessError
from harness.variants.answers import answer_config, check_answer_backend, read_answers

REMOTE = ("openai", "anthropic")
EMBEDDERS = ("openai", "sentence-transformers", "hf")
LOCAL_MODEL_BACKENDS = ("vllm", "hf", "sentence-transformers")  # a hub id or a local directory
# Options whose implementation lands separately (issue 15): refused in one line until then, never ignored.
STOP_SENT_BY = frozenset({"openai", "anthropic"})  # backends that send --stop sequences


def validate(config: RunConfig) -> None:
    """Raise HarnessError (one line) for the first thing wrong with this configuration."""
    check_numbers(config)
    check_names(config)
    check_files(config)
    check_backends(config)


def _at_least(flag: str, value: int | None, low: int) -> None:
    if value is not None and value < low:
        raise HarnessError(f"{flag} must be {'at least ' + str(low) if low else '0 or more'}, got {value}")


def _finite(flag: str, value: float | None, *, positive: bool = False) -> None:
    """nan and inf parse as floats; neither is a budget, a timeout or a share."""
    if value is None:
        return
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        want = "a positive number" if positive else "a number 0 or more"
        raise HarnessError(f"{flag} must be {want}, got {value}")


def check_numbers(config: RunConfig) -> None:
    """Counts, budgets and shares: in range, and finite."""
    api, local = config.api, config.local
    _at_least("--shots", config.shots, 0)
    _at_least("--limit", config.limit, 1)
    _at_least("--max-tokens", config.max_tokens, 1)
    _at_least("--concurrency", api.concurrency, 1)
    _at_least("--max-retries", api.max_retries, 0)
    _at_least("--reasoning-tokens", api.reasoning_tokens, 1)
    _at_least("--tensor-parallel", local.tensor_parallel, 1)
    _at_least("--max-model-len", local.max_model_len, 1)
    _at_least("--batch-size", local.batch_size, 1)
    _finite("--timeout", api.timeout, positive=True)
    _finite("--max-cost", api.max_cost)
    _finite("--rpm", api.rpm, positive=True)
    _finite("--tpm", api.tpm, positive=True)
    share = local.gpu_memory_utilization
    if not (math.isfinite(share) and 0 < share <= 1):
        raise HarnessError(f"--gpu-memory-utilization must be a share in (0, 1], got {share}")


def check_run_id(run_id: str | None) -> None:
    """A run id names one folder inside --results-dir: no separators, no '.', '..' or hidden names."""
    if run_id is None:
        return
    seps = {"/", "\\", os.sep, os.altsep or "/", "\0"}
    if not run_id.strip() or run_id.startswith(".") or any(c in run_id for c in seps):
        raise HarnessError(
            f"--run-id {run_id!r} must be a plain folder name (no '/' or '\\', not empty, not starting with '.')"
        )


def check_names(config: RunConfig) -> None:
    """Choices and their combinations."""
    check_run_id(config.run_id)
    if config.variant not in VARIANTS:
        raise HarnessError(f"unknown variant {config.variant!r}; choose from {', '.join(VARIANTS)}")
    if config.variant != "sentences" and config.dataset != "csts":
        raise HarnessError(f"--variant {config.variant} turns C-STS conditions into questions: use --dataset csts")
    if config.variant == "sentences" and (config.answers or config.answer_model):
        raise HarnessError("--answers and --answer-model belong to --variant qa or qa-embed")
    for flag, value, choices in (
        ("--parse", config.parse, PARSE_MODES),
        ("--shot-sampler", config.shot_sampler, SHOT_SAMPLERS),
        ("--scoring", config.scoring, SCORINGS),
    ):
        if value not in choices:
            raise HarnessError(f"unknown {flag} {value!r}; choose from {', '.join(choices)}")
    if any(not s for s in config.stop):
        raise HarnessError("--stop needs a non-empty string")


def check_files(config: RunConfig) -> None:
    """Files the user named: present and regular (a FIFO would block, a directory is a mistake)."""
    for what, path in (
        ("answers file", config.answers),
        ("price table", config.api.prices),
        ("password file", config.password_file),
        ("C-STS archive", config.archive),
    ):
        if path is not None:
            check_regular(Path(path), what)
    if config.answers is not None:
        read_answers(Path(config.answers))  # parsed now, so a dry run refuses a broken file as a real run does


def scoring_backend(config: RunConfig) -> str:
    """The name of the backend that scores (or embeds, for qa-embed), checked without building it."""
    name = config.backend or backend_for(config.model, config.api.base_urls)
    if name not in BACKENDS:
        raise HarnessError(f"unknown backend {name!r}; choose from {', '.join(BACKENDS)}")
    if config.variant == "qa-embed":
        if name not in EMBEDDERS:
            raise HarnessError(
                f"--variant qa-embed needs an embedding model (OpenAI: text-embedding-3-small, ...; local: "
                f"--backend sentence-transformers --model DIR), not a {name} model"
            )
        return name
    if name == "sentence-transformers":
        raise HarnessError("--backend sentence-transformers only embeds text: use it with --variant qa-embed")
    if name == "offline" and config.model not in OFFLINE_MODELS:
        raise HarnessError(f"offline backend has no model {config.model!r}; choose from {', '.join(OFFLINE_MODELS)}")
    return name


def check_backends(config: RunConfig) -> None:
    """Backend names, model names, the options each backend can honour, prices --max-cost needs."""
    # (model, backend, whether it generates text): the scorer, and the answer model of the qa variants
    models = [(config.model, scoring_backend(config), config.variant != "qa-embed")]
    if config.variant != "sentences" and config.answers is None:
        models.append((answer_config(config).model, check_answer_backend(config), True))
    check_scoring(config)  # --scoring expected needs log-probabilities; --constrain a mechanism
    for model, name, generates in models:
        local_path = name in LOCAL_MODEL_BACKENDS and model.startswith(("/", "./", "../", "~"))
        if local_path and not Path(model).expanduser().is_dir():
            raise HarnessError(f"no model directory at {model} (pass a local directory or a hub id)")
        if name in REMOTE and config.api.max_cost is not None and price_for(model, config.api.prices) is None:
            raise HarnessError(f"--max-cost needs a price for {model!r}: none in the package table; pass --prices FILE")
        if generates and name != "offline":  # baselines read the prompt as text: no template, no stop sequences
            _check_decoding(config, name)


def _check_decoding(config: RunConfig, name: str) -> None:
    """--chat/--no-chat and --stop on a backend that generates text."""
    if config.chat is False and name in REMOTE and (not config.api.base_urls or name == "anthropic"):
        raise HarnessError(f"--no-chat: {name} models are chat-only (raw text goes to OpenAI-compatible servers)")
    if config.stop and name not in STOP_SENT_BY:
        raise HarnessError(f"--stop: the {name} backend does not send stop sequences (only openai, anthropic do)")
