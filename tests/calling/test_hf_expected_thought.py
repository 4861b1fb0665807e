"""The hf backend's --scoring expected reads the answer's first position, never a thought's (issue 30, item 3):
hf_steps.answer_probs on real torch logits, the tokens decoded by a stand-in tokenizer (a random tiny model
cannot be made to write a thought on cue; tests/calling/test_expected_thought.py covers the OpenAI wire)."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch", reason='the hf extra is not installed: pip install -e ".[hf]"')
pytest.importorskip("transformers", reason='the hf extra is not installed: pip install -e ".[hf]"')

from harness.calling.backends.hf_steps import Loaded, answer_probs, first_position_probs  # noqa: E402

VOCAB = ["2", " dogs", "</think>", "\n\n", "4", "3", "<think>"]  # token id = index
SCORES = {0: "2", 4: "4", 5: "3"}


class Pieces:
    def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str:
        return "".join(VOCAB[i] for i in ids)


def step(probs: dict[int, float]) -> list[float]:
    """One generation step's logits for one row: log-probabilities (softmax gives them back)."""
    rest = (1 - sum(probs.values())) / (len(VOCAB) - len(probs))
    return [math.log(probs.get(i, rest)) for i in range(len(VOCAB))]


@pytest.mark.parametrize(
    ("kept", "want"),
    [
        ([4], {"4": 0.6, "3": 0.3, "2": 0.02}),  # no thought: the first position (passed in), as ever
        ([0, 1, 2, 3, 4], {"4": 0.6, "3": 0.3, "2": 0.02}),  # "2 dogs</think>\n\n4": the answer's "4" is the 5th token
        ([6, 0, 1], {}),  # "<think>2 dogs": never closed, no answer to read
    ],
)
def test_hf_reads_the_answer_after_a_thought(kept: list[int], want: dict[str, float]) -> None:
    thought = {0: 0.7, 5: 0.2}  # at the thought's positions the mass is on 2 (and 3); 0.02 on each other token
    answer = {4: 0.6, 5: 0.3}
    rows = [thought, thought, thought, thought, answer] if len(kept) > 1 else [answer]
    logits = tuple(torch.tensor([step(p)]) for p in rows)
    lm = Loaded(None, Pieces(), "cpu", False, None, frozenset(), SCORES)
    first = first_position_probs(torch, logits[0], lm)[0]
    got = answer_probs(torch, logits, 0, kept, lm, first)
    assert got == pytest.approx(want, abs=1e-6)
