"""--batch: requests the cache cannot answer go through the provider's batch endpoint (half the list price).

Modules, in pipeline order: `store` (batch records in the cache file), `base` (the provider interface),
`openai` / `anthropic` (each provider's batch protocol through its SDK), `flow` (claim, submit, poll,
collect, resume), `run` (the hooks a run and a sweep call), `listing` (`run_eval.py batches`).
"""


class BatchesPending(Exception):
    """Batches were submitted (or are still running) and --batch-wait ran out: rerun the command to collect.

    Not a HarnessError: the CLI exits with its own status (4), since nothing is wrong and nothing is lost.
    """
