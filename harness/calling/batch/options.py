"""The --batch options, kept here so the CLI needs one line for them (`batches` command: harness/cli/batches.py)."""

from __future__ import annotations

import argparse

from harness.config.settings import BatchOptions
from harness.types import HarnessError

EXIT_BATCH_PENDING = 4  # batches submitted (or still running), nothing written yet: the same command collects them


def add_batch_args(g: argparse._ArgumentGroup) -> None:
    g.add_argument(
        "--batch", action="store_true", help="send uncached requests through the provider's batch endpoint (50%% off)"
    )
    g.add_argument(
        "--batch-wait",
        type=float,
        metavar="S",
        help="--batch: seconds to wait for results (default: until they end); 0: submit and exit with status 4",
    )
    g.add_argument(
        "--batch-poll",
        type=float,
        default=BatchOptions.poll,
        metavar="S",
        help="--batch: seconds between status checks",
    )
    g.add_argument(
        "--batch-max-requests", type=int, metavar="N", help="--batch: requests per batch (default: provider's limit)"
    )


def batch_options(a: argparse.Namespace) -> BatchOptions | None:
    """BatchOptions from the parsed arguments (None without --batch); a bad value is one line before any work."""
    if not a.batch:
        if a.batch_wait is not None or a.batch_max_requests is not None:
            raise HarnessError("--batch-wait and --batch-max-requests go with --batch")
        return None
    if a.no_cache:
        raise HarnessError("--batch keeps answers and batch ids in the response cache: it cannot run with --no-cache")
    if a.batch_wait is not None and a.batch_wait < 0:
        raise HarnessError(f"--batch-wait must be 0 or more, got {a.batch_wait}")
    if a.batch_poll <= 0:
        raise HarnessError(f"--batch-poll must be positive, got {a.batch_poll}")
    if a.batch_max_requests is not None and a.batch_max_requests < 1:
        raise HarnessError(f"--batch-max-requests must be at least 1, got {a.batch_max_requests}")
    return BatchOptions(a.batch_wait, a.batch_poll, a.batch_max_requests)  # started: now
