"""A toy variant, added as docs/extending.md says: this module, with the functions of harness/variants/base.py
Variant, and one entry in harness/variants/__init__.py VARIANTS (tests/variants/test_new_variant.py adds it).

It asks the sentence prompt with the condition written after each sentence, so a scorer that reads only the two
sentences (the offline overlap baseline) sees the condition in both. Everything else is the paper's path."""

from __future__ import annotations

import dataclasses
from typing import Any

from harness.config.settings import RunConfig
from harness.prompting.prepared import Prepared
from harness.prompting.render import PromptRenderer
from harness.types import Example, Request
from harness.variants import sentences

template = sentences.template
scoring_backend = sentences.scoring_backend
score_range = sentences.score_range
dry_run = sentences.dry_run
evaluate = sentences.evaluate


def with_condition(e: Example) -> Example:
    return dataclasses.replace(e, sentence1=f"{e.sentence1} {e.condition}", sentence2=f"{e.sentence2} {e.condition}")


def requests(
    config: RunConfig, queries: tuple[Example, ...], shots: tuple[tuple[Example, ...], ...], renderer: PromptRenderer
) -> tuple[Request, ...]:
    return sentences.requests(config, tuple(map(with_condition, queries)), shots, renderer)


def identity(config: RunConfig, prep: Prepared) -> dict[str, Any]:
    return {"toy_rule": "condition after each sentence"}  # what else decides its prompts (config.json, config_hash)


def run_label(prep: Prepared) -> str:
    return "toy-" + sentences.run_label(prep)
