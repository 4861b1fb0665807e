"""What the runner asks of a variant: each variant is one module (sentences.py, qa.py, qa_embed.py) with these
functions, named by its line in harness/variants/__init__.py VARIANTS (harness/runner.py `variant_of`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from harness.calling.backends.base import Backend
from harness.calling.pricing import Price
from harness.config.settings import RunConfig
from harness.prompting.prepared import Prepared
from harness.prompting.render import PromptRenderer
from harness.types import Dataset, Example, Request, Scored


@dataclass(frozen=True)
class Outcome:
    """What a variant's path returns: one sample per query, its metrics beyond the correlations ("usage",
    "cache", "dispatch", "answers", in that order) and its extra files (answers.jsonl)."""

    samples: list[Scored]
    metrics: dict[str, Any]
    files: dict[str, str | bytes] = field(default_factory=dict)  # bytes: a binary file (CASE weights)
    label_scale: bool = True  # predictions are parsed scores on the label scale; False: cosines (no MSE, no strict)


class Variant(Protocol):
    """A variant module's functions (a module is a Protocol implementation: its functions take no self)."""

    def template(self, config: RunConfig) -> str:
        """The template the run's renderer loads (config.json "template")."""
        ...

    def requests(
        self,
        config: RunConfig,
        queries: tuple[Example, ...],
        shots: tuple[tuple[Example, ...], ...],
        renderer: PromptRenderer,
    ) -> tuple[Request, ...]:
        """The scoring prompts known before any call (Prepared.requests); checks its templates render."""
        ...

    def scoring_backend(self, config: RunConfig) -> Backend:
        """The backend of the run's model; fails in one line, before any work, when a backend cannot be used."""
        ...

    def score_range(self, dataset: Dataset) -> tuple[float, float]:
        """What predictions range over."""
        ...

    def identity(self, config: RunConfig, prep: Prepared) -> dict[str, Any]:
        """What else decides the run's requests, for config.json and its config_hash."""
        ...

    def run_label(self, prep: Prepared) -> str:
        """The prompt's part of the run id."""
        ...

    def dry_run(self, config: RunConfig, prep: Prepared, price: Price | None) -> tuple[list[Scored], dict[str, Any]]:
        """--dry-run: the samples with every prompt rendered, and the estimate (harness/calling/estimate.py)."""
        ...

    def evaluate(self, config: RunConfig, prep: Prepared, backend: Backend, price: Price | None) -> Outcome:
        """The variant's path: its calls, its samples, its extra metrics and files."""
        ...
