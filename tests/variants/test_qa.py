"""QA variant building blocks: questions (Tu et al. fn. 4), unique answers, Figures 7 and 9 verbatim."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.prompting.render import PromptRenderer
from harness.types import Example, HarnessError
from harness.variants.answers import (
    ANSWER_TEMPLATE,
    AnswerKey,
    answer_keys,
    answer_record,
    answer_requests,
    clean_answer,
    question_for,
    read_answers,
)
from harness.variants.qa import SCORE_TEMPLATE, qa_view

FIGURE_7 = (
    "Your task is to answer a question based on the information provided from the given sentence. "
    "You should summarize your answer into a word or a phrase that is clear and concise.\n\n"
    "Sentence: A red kite flies high.\nQuestion: What is the color of the kite?\n\nAnswer:"
)
FIGURE_9 = (
    "On a scale between 1 and 5, how similar are the following two answers with respect to the condition "
    "provided? Respond only with a score between 1 and 5.\n\n"
    "Input:\nAnswer 1: red\nAnswer 2: blue\nCondition: The color of the kite.\n\nOutput:"
)
FIGURE_8 = (
    "On a scale between 1 and 5, how similar are the following two sentences with respect to the condition "
    "provided? Respond only with a score between 1 and 5.\n\n"
    "Input:\nSentence 1: A red kite flies high.\nSentence 2: A blue kite lands.\nCondition: The color of the kite."
    "\n\nOutput:"
)
Q = Example("0", "A red kite flies high.", "A blue kite lands.", "The color of the kite.", 2.0)


@pytest.mark.parametrize(
    ("condition", "question"),
    [
        ("The color of the kite.", "What is the color of the kite?"),
        ("The Number of People", "What is the number of people?"),
        ("  The sport. ", "What is the sport?"),
        ("The U.S.A.", "What is the u.s.a?"),
    ],
)
def test_condition_becomes_a_question(condition: str, question: str) -> None:
    assert question_for(condition) == question


def test_figure_7_answer_prompt_is_verbatim() -> None:
    (req,) = answer_requests([AnswerKey(Q.sentence1, Q.condition)], PromptRenderer(ANSWER_TEMPLATE))
    assert req.prompt == FIGURE_7


def test_figure_9_score_prompt_is_verbatim() -> None:
    answers = {AnswerKey(Q.sentence1, Q.condition): "red", AnswerKey(Q.sentence2, Q.condition): "blue"}
    prompt = PromptRenderer(SCORE_TEMPLATE).render(qa_view(Q, answers), [])  # type: ignore[arg-type]
    assert prompt == FIGURE_9


def test_figure_8_base_prompt_is_verbatim() -> None:
    assert PromptRenderer("csts/tu-base.j2").render(Q, []) == FIGURE_8


def test_answers_are_unique_per_sentence_and_condition() -> None:
    shot_a = Example("1", "S", "T", "The size.", 4.0)
    shot_b = Example("2", "S", "T", "The color of the kite.", 1.0)
    same_pair_other_condition = Example("3", Q.sentence1, Q.sentence2, "The size.", 3.0)
    keys = answer_keys([[Q, shot_a, shot_b], [same_pair_other_condition, shot_a, shot_b]])
    assert len(keys) == 8 and len(set(keys)) == 8
    assert len({k.id for k in keys}) == 8


def test_clean_answer_flattens_whitespace() -> None:
    assert clean_answer("  red\n and white ") == "red and white"
    assert clean_answer("   ") is None and clean_answer(None) is None


def test_answers_file_round_trip(tmp_path: Path) -> None:
    k1, k2 = AnswerKey("s1", "c"), AnswerKey("s2", "c")
    path = tmp_path / "answers.jsonl"
    path.write_text(
        json.dumps(answer_record(k1, "red", "m", None))
        + "\n"
        + json.dumps(answer_record(k2, None, "m", "HTTP 500"))
        + "\n"
    )
    assert read_answers(path) == {k1: "red"}


def test_malformed_answers_file_is_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "answers.jsonl"
    path.write_text('{"answer": "red"}\n')
    with pytest.raises(HarnessError, match="line 1: not an answers.jsonl record"):
        read_answers(path)
