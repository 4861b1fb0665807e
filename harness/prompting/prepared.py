"""What a run decided before any model is called: its data, queries, shots and first prompts."""

from __future__ import annotations

from dataclasses import dataclass

from harness.prompting.render import PromptRenderer
from harness.types import Dataset, Example, Request


@dataclass(frozen=True)
class Prepared:
    """Everything decided before any model is called (harness/runner.py `prepare`).

    `requests`: the scoring prompts known before any call, one per query (sentences variant; --repeats K: K per
    query, repeat by repeat, harness/variants/sentences.py `requests`); none for the qa variants
    (harness/variants/qa.py, qa_embed.py), which ask for answers first and render (or embed) from those."""

    dataset: Dataset
    queries: tuple[Example, ...]
    shots: tuple[tuple[Example, ...], ...]
    requests: tuple[Request, ...]
    renderer: PromptRenderer
    # --shard K/N: the whole run's Prepared this part was cut from (its shots and count identify the whole run,
    # harness/runner.py config_record); None: not a part.
    whole: Prepared | None = None
