"""--batch's exit status; its options (--batch, --batch-wait, --batch-poll, --batch-max-requests) are declared with
BatchOptions (harness/config/sections.py), the `batches` command is harness/cli/batches.py."""

from __future__ import annotations

EXIT_BATCH_PENDING = 4  # batches submitted (or still running), nothing written yet: the same command collects them
