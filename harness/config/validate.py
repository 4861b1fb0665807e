"""The checks of a RunConfig's values that need nothing but the values: numbers in range, known choices, files
the user named present and regular. harness/variants/validate.py `validate_run` runs these first, then what the
backends and variants know (harness/calling/validate.py), in one order, once per run, dry runs alike."""

from __future__ import annotations

import math
import os
from pathlib import Path
from urllib.parse import urlsplit

from harness.config.settings import PARSE_MODES, SCORINGS, SHOT_SAMPLERS, RunConfig
from harness.inputs import check_regular
from harness.types import HarnessError

# --run-id: a folder name holds 255 bytes; ".ID.staging-PID-XXXXXXXX" beside it needs ~35 more (results/claims.py).
MAX_RUN_ID_BYTES = 200


def validate(config: RunConfig) -> None:
    """Raise HarnessError (one line) for the first thing wrong with this configuration's values."""
    check_numbers(config)
    check_names(config)
    check_files(config)


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
    _at_least("--data-parallel", local.data_parallel, 1)
    _at_least("--max-model-len", local.max_model_len, 1)
    _at_least("--batch-size", local.batch_size, 1)
    _finite("--timeout", api.timeout, positive=True)
    _finite("--wait-for-server", api.wait_for_server)
    _finite("--max-reply-mb", api.max_reply_mb, positive=True)
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
    if len(run_id.encode("utf-8", "surrogatepass")) > MAX_RUN_ID_BYTES:
        raise HarnessError(
            f"--run-id is {len(run_id.encode('utf-8', 'surrogatepass'))} bytes long: at most {MAX_RUN_ID_BYTES} "
            "(a folder name holds 255 bytes, and the lock and staging names beside it need the rest)"
        )


def check_names(config: RunConfig) -> None:
    """Choices and their combinations."""
    if not config.model.strip():
        raise HarnessError("--model is empty: name the model to evaluate")
    check_run_id(config.run_id)
    for flag, value, choices in (
        ("--parse", config.parse, PARSE_MODES),
        ("--shot-sampler", config.shot_sampler, SHOT_SAMPLERS),
        ("--scoring", config.scoring, SCORINGS),
    ):
        if value not in choices:
            raise HarnessError(f"unknown {flag} {value!r}; choose from {', '.join(choices)}")
    if any(not s for s in config.stop):
        raise HarnessError("--stop needs a non-empty string")
    for url in config.api.base_urls:  # the SDKs refuse it only at the first request, after their retries
        if urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).netloc:
            raise HarnessError(f"--base-url {url!r} needs http:// or https:// in front (e.g. http://{url})")


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
