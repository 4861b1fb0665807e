"""Every check of a RunConfig, in one order, run once by every real run, dry run and sweep cell (runner.plan).

A dry run therefore refuses exactly what a real run refuses, with the same message. Each layer checks what it
knows: harness/config/validate.py the values themselves, harness/calling/validate.py each model's backend and
options, and this module what a variant needs of them, as its line of harness/variants/__init__.py VARIANTS says
(an embedding model for qa-embed, an answer model that writes text, C-STS, a readable --answers file). Templates
and data are checked when they are read, also before any request; an API key and an installed engine when the
backend is built (harness/calling/backends)."""

from __future__ import annotations

from pathlib import Path

from harness.calling.backends.choose import backend_name, check_scoring, described
from harness.calling.validate import check_model, check_think_tags
from harness.config.settings import EmbedOptions, RunConfig
from harness.config.validate import validate
from harness.datasets.choose import describe_dataset
from harness.types import HarnessError
from harness.variants import VARIANTS, Description, described_variant
from harness.variants.answers import answer_config, check_answer_backend, read_answers


def validate_run(config: RunConfig) -> None:
    """Raise HarnessError (one line) for the first thing wrong with this configuration."""
    v = check_variant(config)  # first, as config/validate.py checked the variant before its files
    validate(config)
    check_think_tags(config)
    if config.answers is not None:
        read_answers(Path(config.answers))  # parsed now, so a dry run refuses a broken file as a real run does
    # (model, backend, whether it generates text): the scorer, and the answer model of the qa variants
    models = [(config.model, scoring_backend(config), not v.embeds)]
    if v.answers and config.answers is None:
        models.append((answer_config(config).model, check_answer_backend(config), True))
    check_scoring(config)  # --scoring expected needs log-probabilities
    for model, name, generates in models:
        check_model(config, model, name, generates)


def check_variant(config: RunConfig) -> Description:
    """The variant's line of VARIANTS, and what it needs of the data and the answer options."""
    v = described_variant(config.variant)
    if v.answers and not describe_dataset(config.dataset).conditions:
        raise HarnessError(f"--variant {config.variant} turns C-STS conditions into questions: use --dataset csts")
    if config.variant != "case" and config.embed != EmbedOptions():
        raise HarnessError("--case-setting, --case-inputs and --case-ffn* belong to --variant case")
    if config.variant != "sentences" and (config.repeats != 1 or config.temperature != 0):
        raise HarnessError(f"--repeats and --temperature belong to --variant sentences, not {config.variant}")
    if not v.answers and (config.answers or config.answer_model):
        asking = " or ".join(name for name, d in VARIANTS.items() if d.answers)
        raise HarnessError(f"--answers and --answer-model belong to --variant {asking}")
    return v


def scoring_backend(config: RunConfig) -> str:
    """The name of the backend that scores (or embeds, for qa-embed), checked without building it."""
    name = backend_name(config)
    d = described(name)
    if described_variant(config.variant).embeds:
        if d.embedder is None:
            raise HarnessError(
                f"--variant {config.variant} needs an embedding model (OpenAI: text-embedding-3-small, ...; local: "
                f"--backend sentence-transformers --model DIR), not a {name} model"
            )
        return name
    if d.kind == "embedder":
        embedding = " or ".join(n for n, v in VARIANTS.items() if v.embeds)
        raise HarnessError(f"--backend {name} only embeds text: use it with --variant {embedding}")
    if d.kind == "baseline" and config.model not in d.models:
        raise HarnessError(f"{name} backend has no model {config.model!r}; choose from {', '.join(d.models)}")
    return name
