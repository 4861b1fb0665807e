"""The answer is what comes after the thinking (harness/scoring/reasoning.py), on a table of replies in each
format the open models write, and the reason code a reply cut off while thinking gets."""

from __future__ import annotations

import pytest

from harness.scoring.parsing import parse_score, reason_code
from harness.scoring.reasoning import THINK_TAGS, Split, parse_tags, split_reply, thinking_cut_off
from harness.scoring.score import answer_parser

AUTO = parse_tags("auto")

# (text, provider's reasoning field, expected answer, expected thought, unclosed)
CASES: list[tuple[str, str | None, str | None, str | None, bool]] = [
    ("4", None, "4", None, False),  # no thought: the whole text is the answer
    ("<think>\nThe user wants 1 to 5. Maybe 2.\n</think>\n\n4", None, "4", "The user wants 1 to 5. Maybe 2.", False),
    # DeepSeek-R1's template opens the thought in the prompt: only the closing tag is in the reply
    ("Okay, sentence 1 says 3 dogs.\n</think>\nAnswer: 5", None, "Answer: 5", "Okay, sentence 1 says 3 dogs.", False),
    ("<think>\nOkay, the user wants", None, None, "Okay, the user wants", True),  # cut off while thinking
    ("<think>\n\n</think>\n\n3.5", None, "3.5", "", False),  # Qwen3 with enable_thinking=False: an empty thought
    (
        "<|begin_of_thought|>1 or 2?<|end_of_thought|>\n<|begin_of_solution|>2<|end_of_solution|>",
        None,
        "2",
        "1 or 2?",
        False,
    ),
    (
        "<|channel|>analysis<|message|>Scale 1-5; similar.<|end|>"
        "<|start|>assistant<|channel|>final<|message|>4<|return|>",
        None,
        "4",
        "Scale 1-5; similar.",
        False,
    ),
    ("<|channel|>analysis<|message|>Scale 1 to 5", None, None, "Scale 1 to 5", True),  # harmony, cut off
    ("[THINK]3 maybe[/THINK]2", None, "2", "3 maybe", False),  # Magistral
    ("<seed:think>7?</seed:think> 1", None, "1", "7?", False),  # Seed-OSS
    ("◁think▷5◁/think▷3", None, "3", "5", False),  # Kimi
    ("<think>a</think><think>b 9</think> 2", None, "2", "a\nb 9", False),  # several: the last close ends it
    ("4", "The pair differs in 2 ways.", "4", "The pair differs in 2 ways.", False),  # a server's separate field
    ("", "The user wants a number from 1", "", "The user wants a number from 1", False),  # field, cut off
    ("<think>x 3</think>5", "summary 1", "5", "summary 1\nx 3", False),  # a field and an inline thought
]


@pytest.mark.parametrize(("text", "field", "answer", "thought", "unclosed"), CASES)
def test_the_answer_is_what_follows_the_thought(
    text: str, field: str | None, answer: str | None, thought: str | None, unclosed: bool
) -> None:
    assert split_reply(text, field, AUTO) == Split(answer, thought, unclosed)


@pytest.mark.parametrize(
    ("text", "score"),
    [
        ("<think>\nSentence 1 has 2 dogs; 3 is right.\n</think>\n\n4", 4.0),  # not 2, the thought's first number
        ("<think>\nOkay, the user wants 3", None),  # cut off inside the thought: no number
        ("1 </think> 5", 5.0),
        ("No thought here, 3.", 3.0),
    ],
)
def test_the_first_number_rule_reads_only_the_answer(text: str, score: float | None) -> None:
    assert answer_parser(AUTO)(text) == score
    assert answer_parser(())(text) == parse_score(text)  # --think-tags none: the paper's rule on all of it


def test_none_turns_splitting_off_and_custom_pairs_are_read() -> None:
    assert split_reply("<think>2</think>4", None, parse_tags("none")) == Split("<think>2</think>4", None)
    assert parse_tags("think, <r> </r>") == (THINK_TAGS["think"], ("<r>", "</r>"))
    assert split_reply("<r>2</r>4", None, parse_tags("<r> </r>")) == Split("4", "2")
    with pytest.raises(ValueError, match="neither a known format"):
        parse_tags("<r></r>")


@pytest.mark.parametrize(
    ("split", "finish", "hidden", "cut"),
    [
        (Split(None, "Okay, the user", True), "length", 0, True),  # inline, never closed, budget spent
        (Split(None, "Okay, the user", True), "stop", 0, False),  # closed by EOS without an answer: no-number
        (Split("", "The user wants", False), "length", 0, True),  # a server's field, no answer text
        (Split("", None, False), "length", 900, True),  # OpenAI: hidden reasoning used the whole budget
        (Split("", None, False), "length", 0, False),  # a plain reply cut off before any text: cut-off
        (Split("The score is", "x", False), "length", 0, False),  # cut off in the answer: cut-off
    ],
)
def test_thinking_cut_off(split: Split, finish: str, hidden: int, cut: bool) -> None:
    assert thinking_cut_off(split, finish, hidden) is cut


def test_a_reply_cut_off_while_thinking_has_its_own_reason_code() -> None:
    split = split_reply("<think>\nOkay, the user wants 3", None, AUTO)
    cut = thinking_cut_off(split, "length", 0)
    assert reason_code("", None, (0.0, 5.0), "length", None, None, cut) == "thinking-cut-off"
    assert reason_code("", None, (0.0, 5.0), "length", None, None, False) == "cut-off"
    assert reason_code("", None, (0.0, 5.0), None, None, "boom", True) == "error"  # a failed request stays one


def _first_pair_by_scanning(text: str, tags: tuple[tuple[str, str], ...]) -> tuple[str, str] | None:
    """The plain reading of "the delimiter pair that shows first" (each pair's earliest delimiter; a tie goes to the
    pair listed first): the yardstick for the one-regex scan split_reply makes."""
    best: tuple[int, tuple[str, str]] | None = None
    for pair in tags:
        at = min((i for i in (text.find(pair[0]), text.find(pair[1])) if i >= 0), default=-1)
        if at >= 0 and (best is None or at < best[0]):
            best = (at, pair)
    return None if best is None else best[1]


def test_the_pair_that_shows_first_is_found_as_a_plain_scan_finds_it() -> None:
    """Random replies built from every format's delimiters (and a custom pair sharing a prefix with one) split
    exactly as when the text is split with the pair a plain scan picks: a wrong tie-break or a missed tag shows."""
    import random

    tags = (*AUTO, ("<th", "th>"))  # a custom pair whose opening is a prefix of "<think>"
    pieces = [t for pair in tags for t in pair] + ["4", " 2.5 ", "x", "<", "\n", "think", "|"]
    rng = random.Random(7)
    seen_pairs = set()
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 6)))
        pair = _first_pair_by_scanning(text, tags)
        got = split_reply(text, None, tags)
        want = split_reply(text, None, (pair,)) if pair else Split(text, None)
        assert got == want, text
        seen_pairs.add(pair)
    assert len(seen_pairs) == len(tags) + 1  # every pair (and none) was the first one somewhere


@pytest.mark.parametrize(
    ("text", "field", "want"),
    [
        (None, "a thought, no text", Split(None, "a thought, no text")),  # no reply text: the field is the thought
        ("</think>4", None, Split("4", "")),  # the closing tag first (the template opened it): an empty thought
    ],
)
def test_edge_replies_split_as_they_should(text: str | None, field: str | None, want: Split) -> None:
    assert split_reply(text, field, AUTO) == want


def test_one_hidden_reasoning_token_with_no_answer_is_a_cut_off() -> None:
    assert thinking_cut_off(Split("", None), "length", 1)
    assert not thinking_cut_off(Split("", None), "length", 0)
