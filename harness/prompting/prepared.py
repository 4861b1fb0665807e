"""What a run decided before any model is called: its data, queries, shots and first prompts."""

from __future__ import annotations

from dataclasses import dataclass

from harness.prompting.render import PromptRenderer
from harness.types import Dataset, Example, Request


@dataclass(frozen=True)
class Prepared:
    """Everything decided before any model is called (harness/runner.py `prepare`).

    `requests` are what the run sends first: one scoring prompt per query for the sentences variant, one
    answer prompt per unique (sentence, condition) for the qa variants (harness/variants/qa.py), which
    render their scoring prompts once the answers exist."""

    dataset: Dataset
    queries: tuple[Example, ...]
    shots: tuple[tuple[Example, ...], ...]
    requests: tuple[Request, ...]
    renderer: PromptRenderer
