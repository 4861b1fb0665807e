"""The T5 layout templates (templates/<dataset>/t5-*.j2) follow the reference code's rule for T5-family models.

The rule, read from princeton-nlp/c-sts utils/fewshot/generate_in_context_dataset.py (tokenizer_type "t5"):
each key is `Key:` (no trailing space) joined to its text with one space, the fields of one example joined by
one space, sentences stripped, the shot label appended straight after `Output:` as `float(label)`, the
instruction (stripped of " :") on the first line, examples one per line, the query's `Output:` last.
"""

from __future__ import annotations

import pytest

from harness.datasets.choose import load_dataset
from harness.prompting.fewshot import ShotPicker
from harness.prompting.render import PromptRenderer, template_name
from harness.types import Example
from tests.conftest import SHARED_ARCHIVE, SHARED_PASSWORD, requires_shared

SHORT_CSTS = (
    "On a scale between 1 and 5, how similar are the following two sentences with respect to the condition "
    "provided? Respond only with a score between 1 and 5."
)


def test_zero_shot_csts_has_no_space_after_the_last_output_key() -> None:
    q = Example("0", "A cat sits.", "A dog runs.", "The animal.", 3.0)
    text = PromptRenderer("csts/t5-none.j2").render(q, [])
    assert text == "Input: Sentence 1: A cat sits. Sentence 2: A dog runs. Condition: The animal. Output:"


def test_shot_label_follows_output_without_a_space_and_sentences_are_stripped() -> None:
    shot = Example("7", "  A cat sits on a mat. ", "A dog runs.", "The animal.", 4.0)
    q = Example("0", "A bird flies.", " A fish swims.", "The number of legs.", None)
    text = PromptRenderer("csts/t5-short.j2").render(q, [shot])
    assert text == (
        f"{SHORT_CSTS}\n"
        "Input: Sentence 1: A cat sits on a mat. Sentence 2: A dog runs. Condition: The animal. Output:4.0\n"
        "Input: Sentence 1: A bird flies. Sentence 2: A fish swims. Condition: The number of legs. Output:"
    )


def test_empty_condition_leaves_the_joining_space() -> None:
    # ' '.join(['Condition:', '']) is 'Condition: ', then ' Output:' follows.
    text = PromptRenderer("csts/t5-none.j2").render(Example("0", "a", "b", "", 1.0), [])
    assert text == "Input: Sentence 1: a Sentence 2: b Condition:  Output:"


def test_stsb_layout_has_no_condition() -> None:
    shot = Example("3", "x y", "z", "", 3.2)
    text = PromptRenderer("stsb/t5-none.j2").render(Example("0", "a", "b", "", None), [shot])
    assert text == "Input: Sentence 1: x y Sentence 2: z Output:3.2\nInput: Sentence 1: a Sentence 2: b Output:"


@pytest.mark.parametrize("dataset", ["csts", "stsb"])
@pytest.mark.parametrize("instr", ["short", "long"])
def test_instructions_are_the_gpt_layouts_instructions(dataset: str, instr: str) -> None:
    q = Example("0", "a", "b", "c", None)
    gpt = PromptRenderer(f"{dataset}/{instr}.j2").render(q, [])
    t5 = PromptRenderer(f"{dataset}/t5-{instr}.j2").render(q, [])
    assert t5.split("\n")[0] == gpt.split("\n")[0]
    assert t5.count("\n") == 1


def reference_t5(query: Example, shots: list[Example], instruction: str | None, stsb: bool) -> str:
    """The reference rule for T5 models, restated field by field (not the templates' code)."""

    def key(name: str) -> str:
        return f"{name.capitalize()}:"

    def convert(e: Example) -> str:
        fields = [
            key("input"),
            f"{key('sentence 1')} {e.sentence1.strip()}",
            f"{key('sentence 2')} {e.sentence2.strip()}",
        ]
        if not stsb:
            fields.append(f"{key('condition')} {e.condition}")
        fields.append(key("output"))
        return " ".join(fields)

    lines = [instruction.strip(" :")] if instruction else []
    lines += [convert(s) + f"{float(s.label)}" for s in shots]  # type: ignore[arg-type]
    lines.append(convert(query))
    return "\n".join(lines)


@requires_shared
@pytest.mark.parametrize("instr", ["none", "short", "long"])
def test_every_csts_validation_prompt_matches_the_reference_rule(instr: str) -> None:
    ds = load_dataset("csts", "validation", archive=SHARED_ARCHIVE, password_file=SHARED_PASSWORD)
    renderer = PromptRenderer(template_name("csts", instr, f"t5-{instr}"))
    picker = ShotPicker("csts", ds.pool, seed=0, paired=True)
    instruction = (
        None if instr == "none" else PromptRenderer(f"csts/{instr}.j2").render(ds.examples[0], []).split("\n")[0]
    )
    mismatched = []
    for q in ds.examples:
        shots = list(picker.pick(q, 4))
        if renderer.render(q, shots) != reference_t5(q, shots, instruction, stsb=False):
            mismatched.append(q.id)
    assert mismatched == []
