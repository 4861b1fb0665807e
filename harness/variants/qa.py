"""QA-answer variant (Tu et al. 2024, §4-5): turn each condition into a question, answer it per sentence."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness.calling.backends import backend_for, make_backend
from harness.calling.backends.base import Backend
from harness.calling.calls import call, price_of, usage
from harness.calling.dispatch import DispatchStats
from harness.calling.pricing import Price
from harness.config.settings import RunConfig
from harness.datasets.load import pair_ids
from harness.inputs import read_bytes, read_text
from harness.prompting.render import PromptRenderer
from harness.types import Completion, Dataset, Example, HarnessError, Request, Scored

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
    k1, k2 = _keys(example)
    return {
        "answer1": answers[k1],
        "answer2": answers[k2],
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
    lines = read_text(Path(path), "answers file").splitlines()
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


# --- the answer step of a run --------------------------------------------------------------------


def answer_config(config: RunConfig) -> RunConfig:
    """The run's settings as seen by the answer model: --answer-backend, else the one its name implies, else
    --backend (so a model served under any name by your own --base-url server needs no second flag)."""
    model = config.answer_model or config.model
    backend = config.answer_backend
    if backend is None:
        try:
            backend = backend_for(model, config.api.base_urls)
        except HarnessError:
            backend = config.backend
    return dataclasses.replace(config, model=model, backend=backend)


def check_answer_backend(config: RunConfig) -> str:
    """The answer model's backend name, checked without building it (dry runs check exactly this too)."""
    acfg = answer_config(config)
    name = acfg.backend or backend_for(acfg.model, config.api.base_urls)
    if name == "offline":
        raise HarnessError(
            f"--answer-model {acfg.model!r} is an offline baseline: the qa variants need a language model "
            "to answer questions (--answer-model gpt-3.5-turbo, or --answers FILE from an earlier run)"
        )
    if name == "sentence-transformers":
        raise HarnessError("--answer-backend sentence-transformers only embeds text: it cannot answer questions")
    return name


def make_answer_backend(config: RunConfig) -> Backend:
    """The backend answering the questions: a language model, never an offline baseline or an embedder."""
    check_answer_backend(config)
    return make_backend(answer_config(config), (1.0, 5.0))


def generate_answers(
    config: RunConfig, keys: Sequence[AnswerKey], requests: Sequence[Request]
) -> tuple[dict[AnswerKey, str], str, dict[str, Any]]:
    """Answers for every key: reused from --answers, else asked once per unique (sentence, condition).

    Returns (answers, answers.jsonl text, metrics); a failed or empty answer is absent from `answers`.
    """
    reused = read_answers(config.answers) if config.answers else {}
    todo = tuple(r for k, r in zip(keys, requests, strict=True) if k not in reused)
    metrics: dict[str, Any] = {"unique": len(keys), "reused_from_file": len(keys) - len(todo), "requested": len(todo)}
    completions: dict[str, Completion] = {}
    acfg = answer_config(config)
    if todo:
        backend = make_answer_backend(config)
        price = price_of(acfg, backend)
        stats = DispatchStats()
        completions = call(backend, todo, acfg, price, stats, desc=f"answers ({acfg.model})", scores=False)
        metrics |= {"model": acfg.model, "usage": usage(completions, price, stats)} | stats.record()
    answers: dict[AnswerKey, str] = {}
    lines = []
    for k in keys:
        if k in reused:
            text: str | None = reused[k]
            error, model = None, f"from {config.answers}"
        else:
            c = completions[k.id]
            text = clean_answer(c.text) if c.error is None else None
            error, model = c.error or (None if text else "empty answer"), acfg.model
        if text:
            answers[k] = text
        lines.append(json.dumps(answer_record(k, text, model, error), ensure_ascii=False) + "\n")
    metrics["failed"] = len(keys) - len(answers)
    return answers, "".join(lines), metrics


def score_requests(
    queries: Sequence[Example],
    shots: Sequence[Sequence[Example]],
    answers: Mapping[AnswerKey, str],
    renderer: PromptRenderer,
    max_tokens: int = 20,
) -> tuple[tuple[Request, ...], dict[str, Completion]]:
    """Figure 9 prompts for queries whose answers (and their shots' answers) all exist; the rest fail as errors."""
    requests, failed = [], {}
    for q, q_shots in zip(queries, shots, strict=True):
        missing = [k for e in (q, *q_shots) for k in _keys(e) if k not in answers]
        if missing:
            requests.append(Request(q.id, ""))
            failed[q.id] = Completion(q.id, None, error=f"no answer to {question_for(missing[0].condition)!r}")
        else:
            views = [qa_view(s, answers) for s in q_shots]
            prompt = renderer.render(qa_view(q, answers), views)  # type: ignore[arg-type]
            requests.append(Request(q.id, prompt, max_tokens=max_tokens))
    return tuple(requests), failed


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity; 0.0 when either vector is all zeros."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    norm = float(np.linalg.norm(x) * np.linalg.norm(y))
    return float(x @ y) / norm if norm else 0.0


def embedding_requests(answers: Mapping[AnswerKey, str]) -> tuple[Request, ...]:
    """One request per distinct answer text (its id a hash of the text)."""
    texts = sorted(set(answers.values()))
    return tuple(Request("embed-" + hashlib.sha256(t.encode()).hexdigest()[:20], t, max_tokens=0) for t in texts)


def answer_identity(config: RunConfig, unique_answers: int) -> dict[str, Any]:
    """What decides a qa run's answers, for config.json and its config_hash."""
    if config.variant == "sentences":
        return {}
    record: dict[str, Any] = {
        "answer_model": answer_config(config).model,
        "answer_backend": config.answer_backend,
        "answer_template_hashes": PromptRenderer(ANSWER_TEMPLATE).hashes(),
        "unique_answers": unique_answers,
    }
    if config.answers is not None:
        record["answers_file_sha256"] = hashlib.sha256(read_bytes(Path(config.answers), "answers file")).hexdigest()
    return record


def embed_step(
    config: RunConfig,
    queries: Sequence[Example],
    shots: Sequence[Sequence[Example]],
    dataset: Dataset,
    answers: dict[AnswerKey, str],
    backend: Backend,
    price: Price | None,
    stats: DispatchStats,
) -> tuple[list[Scored], dict[str, Completion]]:
    """qa-embed: embed each distinct answer once; a query's prediction is the cosine of its two answers'."""
    requests = embedding_requests(answers)
    completions = call(backend, requests, config, price, stats, desc=f"embeddings ({config.model})", scores=False)
    vectors = {r.prompt: json.loads(c.text) for r in requests if (c := completions[r.id]).text is not None}
    errors = {r.prompt: c.error for r in requests if (c := completions[r.id]).error is not None}
    pairs = pair_ids(dataset.examples)
    samples = []
    for q, q_shots in zip(queries, shots, strict=True):
        k1, k2 = _keys(q)
        a1, a2 = answers.get(k1, ""), answers.get(k2, "")
        if k1 not in answers or k2 not in answers:
            error: str | None = f"no answer to {question_for(q.condition)!r}"
        else:
            error = next((errors[a] for a in (a1, a2) if a in errors), None)
        sim = cosine(vectors[a1], vectors[a2]) if error is None else None
        output = None if sim is None else f"{sim:.6f}"
        reason = "error" if error is not None else "number"  # a cosine is always a number, in [-1, 1]
        shot_ids = tuple(s.id for s in q_shots)
        samples.append(
            Scored(
                q.id, f"{a1}\n{a2}", shot_ids, output, sim, sim is not None, sim, q.label, error, pairs[q.id], reason
            )
        )
    return samples, completions


def _keys(e: Example) -> tuple[AnswerKey, AnswerKey]:
    return AnswerKey(e.sentence1, e.condition), AnswerKey(e.sentence2, e.condition)
