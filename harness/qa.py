"""QA-answer variant (Tu et al. 2024, §4-5): turn each condition into a question, answer it per sentence."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.prompts import PromptRenderer
from harness.types import Example, HarnessError, Request

ANSWER_TEMPLATE = "csts/qa-answer.j2"  # Figure 7
SCORE_TEMPLATE = "csts/qa.j2"  # Figure 9
# Tu et al. ask for "a word or a phrase" and give no token budget; 32 leaves room for a short phrase.
ANSWER_MAX_TOKENS = 32


@dataclass(frozen=True, order=True)
class AnswerKey:
    """What one answer depends on: a sentence and the condition asked about it."""

    sentence: str
    condition: str

    @property
    def id(self) -> str:
        """A stable request id for this answer (the text itself may be long and is never a key on disk)."""
        return "answer-" + hashlib.sha256(f"{self.sentence}\x1f{self.condition}".encode()).hexdigest()[:20]


def question_for(condition: str) -> str:
    """Tu et al. 2024, §4.1 and footnote 4: "What is <condition>?", lower-cased, final period removed."""
    text = condition.strip().lower()
    if text.endswith("."):
        text = text[:-1]
    return f"What is {text}?"


def answer_keys(groups: Iterable[Sequence[Example]]) -> list[AnswerKey]:
    """Every unique (sentence, condition) among the queries and their shots, in first-seen order."""
    seen: dict[AnswerKey, None] = {}
    for examples in groups:
        for e in examples:
            seen.setdefault(AnswerKey(e.sentence1, e.condition), None)
            seen.setdefault(AnswerKey(e.sentence2, e.condition), None)
    return list(seen)


def answer_requests(keys: Sequence[AnswerKey], renderer: PromptRenderer) -> list[Request]:
    """One Figure 7 prompt per unique (sentence, condition)."""
    return [
        Request(
            k.id,
            renderer.render(None, (), sentence=k.sentence, question=question_for(k.condition)),  # type: ignore[arg-type]
            max_tokens=ANSWER_MAX_TOKENS,
        )
        for k in keys
    ]


def clean_answer(text: str | None) -> str | None:
    """The model's answer as one line; None when it gave nothing usable."""
    if text is None:
        return None
    line = " ".join(text.split())
    return line or None


def qa_view(example: Example, answers: Mapping[AnswerKey, str]) -> dict[str, Any]:
    """What the Figure 9 template sees for one example: its two answers, condition and label."""
    return {
        "answer1": answers[AnswerKey(example.sentence1, example.condition)],
        "answer2": answers[AnswerKey(example.sentence2, example.condition)],
        "condition": example.condition,
        "label": example.label,
    }


def answer_record(key: AnswerKey, answer: str | None, model: str, error: str | None) -> dict[str, Any]:
    """One line of answers.jsonl."""
    return {
        "id": key.id,
        "sentence": key.sentence,
        "condition": key.condition,
        "question": question_for(key.condition),
        "answer": answer,
        "model": model,
        "error": error,
    }


def read_answers(path: Path) -> dict[AnswerKey, str]:
    """Answers from an earlier run's answers.jsonl (--answers FILE); failed answers are skipped."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise HarnessError(f"cannot read answers file {path}: {e.strerror}") from None
    answers = {}
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            key, answer = AnswerKey(rec["sentence"], rec["condition"]), rec["answer"]
        except (json.JSONDecodeError, KeyError, TypeError):
            raise HarnessError(f"{path} line {n}: not an answers.jsonl record (sentence, condition, answer)") from None
        if isinstance(answer, str) and answer:
            answers[key] = answer
    return answers
