"""Explicit wiring from --variant to the module that runs it: one table, no registries.

Adding a variant: one module in this folder with the functions of `Variant` (base.py), and one line in VARIANTS
below. The parser's choices, validation (harness/variants/validate.py: what it needs of the run's models, C-STS
for a variant that asks questions) and the runner (harness/runner.py variant_of) read the line; nothing else names a
variant but the published numbers' naming (harness/results/read.py Run.variant) and the two options that only
the sentence prompt supports (--scoring expected, --constrain: harness/calling/backends/__init__.py)."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from harness.types import HarnessError

if TYPE_CHECKING:
    from harness.variants.base import Variant


@dataclass(frozen=True)
class Description:
    """What the rest of the harness knows of one variant, before its module is imported."""

    module: str  # the Variant module (harness/variants/base.py), imported when a run uses it
    # Asks an answer model first (C-STS conditions turned into questions: --answer-model, --answers; C-STS only).
    answers: bool = False
    # Scored by an embedding model (--model embeds; predictions are cosines, not on the label scale: no MSE).
    embeds: bool = False


# One entry per variant: its --variant name -> its description.
VARIANTS: dict[str, Description] = {
    "sentences": Description("harness.variants.sentences"),  # the paper's prompt (Deshpande et al. 2023)
    "qa": Description("harness.variants.qa", answers=True),  # Tu et al. 2024, Fig. 9: the answers scored
    "qa-embed": Description("harness.variants.qa_embed", answers=True, embeds=True),  # cosine of answer embeddings
    "case": Description("harness.variants.case", embeds=True),  # Zhang et al. 2025: sentence+condition embedded
}


def described_variant(name: str) -> Description:
    """The variant's line of VARIANTS; an unknown name fails in one line."""
    if name not in VARIANTS:
        raise HarnessError(f"unknown variant {name!r}; choose from {', '.join(VARIANTS)}")
    return VARIANTS[name]


def variant_module(name: str) -> Variant:
    """The module that runs the variant (imported now: the qa variants bring the answer step with them)."""
    return cast("Variant", importlib.import_module(described_variant(name).module))
