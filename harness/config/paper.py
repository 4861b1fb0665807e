"""The papers' per-model settings a run can ask for by name: `--template paper` (the layout of the model's family)
and `--truncate-input paper` (the reference code's input truncation for that family).

The family rule is the reference code's (princeton-nlp/c-sts run_sts_fewshot.py `get_tokenizer_type`): a model
whose name holds "t5", "t0", "tk-" or "ul2" is a T5-family model, prompted in the T5 layout (`Input: ... Output:`)
and tokenized with `truncation=True`, which cuts each prompt at the tokenizer's own `model_max_length`: 512 for
Flan-T5's tokenizers, and for Flan-UL2's 512 when it was released but 2048 in today's revision (the paper does not say
which revision it loaded: reporting/paper_settings.py `PAPER_INPUT_LIMITS`). GPT models got the chat layout, whole.
The hf backend reads the limit from the tokenizer it loads and records the limit and the tokenizer's revision.
"""

from __future__ import annotations

from harness.types import HarnessError

PAPER = "paper"  # the word that asks for the paper's setting for the run's model
T5_MARKERS = ("t5", "t0", "tk-", "ul2")  # run_sts_fewshot.py get_tokenizer_type
T5_MAX_INPUT = 512  # Flan-T5's tokenizers' model_max_length; `paper` before a tokenizer is read (a dry run)
# transformers stores "no limit stated" as a huge model_max_length (VERY_LARGE_INTEGER, 1e30): `truncation=True`
# then cuts nothing. No real context is near this.
NO_LIMIT_ABOVE = 10**9


def t5_family(model: str) -> bool:
    """Whether the reference code prompted `model` as a T5-family model (its layout, its truncation)."""
    name = model.lower()
    return any(marker in name for marker in T5_MARKERS)


def paper_template(model: str, instr: str) -> str:
    """`--template paper`: t5-<instr> for the T5 family, the GPT layout <instr> for every other model."""
    return f"t5-{instr}" if t5_family(model) else instr


def truncation(setting: str | None, model: str) -> int | None:
    """Prompt tokens kept (None: the whole prompt). `setting` is --truncate-input: None, "paper" (for the T5 family
    the tokenizer's own limit, `tokenizer_limit`, which the hf backend reads when it loads the tokenizer: 512 stands
    for it until then; none otherwise) or a positive integer."""
    if setting is None:
        return None
    if setting == PAPER:
        return T5_MAX_INPUT if t5_family(model) else None
    if not setting.isdigit() or int(setting) < 1:
        raise HarnessError(f"--truncate-input: {setting!r} is neither 'paper' nor a positive integer")
    return int(setting)


def tokenizer_limit(model_max_length: object) -> int | None:
    """What `truncation=True` cuts at for a tokenizer whose `model_max_length` is this: the limit, or None where
    the tokenizer states none (transformers' huge sentinel, or no positive integer)."""
    if isinstance(model_max_length, bool) or not isinstance(model_max_length, int):
        return None
    return model_max_length if 0 < model_max_length <= NO_LIMIT_ABOVE else None
