"""The papers' per-model settings a run can ask for by name: `--template paper` (the layout of the model's family)
and `--truncate-input paper` (the reference code's input truncation for that family).

The family rule is the reference code's (princeton-nlp/c-sts run_sts_fewshot.py `get_tokenizer_type`): a model
whose name holds "t5", "t0", "tk-" or "ul2" is a T5-family model, prompted in the T5 layout (`Input: ... Output:`)
and tokenized with `truncation=True`, which cuts each prompt to the tokenizer's 512 positions; GPT models got the
chat layout, whole.
"""

from __future__ import annotations

from harness.types import HarnessError

PAPER = "paper"  # the word that asks for the paper's setting for the run's model
T5_MARKERS = ("t5", "t0", "tk-", "ul2")  # run_sts_fewshot.py get_tokenizer_type
T5_MAX_INPUT = 512  # the T5 tokenizers' model_max_length, what `truncation=True` cut to


def t5_family(model: str) -> bool:
    """Whether the reference code prompted `model` as a T5-family model (its layout, its truncation)."""
    name = model.lower()
    return any(marker in name for marker in T5_MARKERS)


def paper_template(model: str, instr: str) -> str:
    """`--template paper`: t5-<instr> for the T5 family, the GPT layout <instr> for every other model."""
    return f"t5-{instr}" if t5_family(model) else instr


def truncation(setting: str | None, model: str) -> int | None:
    """Prompt tokens kept (None: the whole prompt). `setting` is --truncate-input: None, "paper" (512 for the T5
    family, none otherwise) or a positive integer."""
    if setting is None:
        return None
    if setting == PAPER:
        return T5_MAX_INPUT if t5_family(model) else None
    if not setting.isdigit() or int(setting) < 1:
        raise HarnessError(f"--truncate-input: {setting!r} is neither 'paper' nor a positive integer")
    return int(setting)
