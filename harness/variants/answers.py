"""The answer step of the qa variants (Tu et al. 2024, §4-5): each condition turned into a question, answered
once per unique (sentence, condition) by a language model, or reused from an earlier run's answers.jsonl."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.calling.backends import BACKENDS
from harness.calling.backends.base import Backend
from harness.calling.backends.choose import backend_for, make_backend
from harness.calling.dispatch import call
from harness.calling.estimate import Step
from harness.calling.options import DispatchStats, dispatch_options
from harness.calling.pricing import price_of, usage
from harness.config.paper import PAPER
from harness.config.settings import RunConfig
from harness.datasets.choose import describe_dataset
from harness.inputs import read_bytes, read_text
from harness.prompting.prepared import Prepared
from harness.prompting.render import PromptRenderer, template_name
from harness.scoring.reasoning import parse_tags, split_reply
from harness.types import Completion, Example, HarnessError, Request

ANSWER_TEMPLATE = "csts/qa-answer.j2"  # Figure 7
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
    kind = BACKENDS[name].kind if name in BACKENDS else None  # an unknown name: calling/validate.py says so
    if kind == "baseline":
        raise HarnessError(
            f"--answer-model {acfg.model!r} is an offline baseline: the qa variants need a language model "
            "to answer questions (--answer-model gpt-3.5-turbo, or --answers FILE from an earlier run)"
        )
    if kind == "embedder":
        raise HarnessError(f"--answer-backend {name} only embeds text: it cannot answer questions")
    return name


def make_answer_backend(config: RunConfig) -> Backend:
    """The backend answering the questions: a language model, never an offline baseline or an embedder."""
    check_answer_backend(config)
    return make_backend(answer_config(config))


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
        options = dispatch_options(acfg, price)
        completions = call(backend, todo, options, stats, desc=f"answers ({acfg.model})").completions
        metrics |= {"model": acfg.model, "usage": usage(completions, price, stats.paid_by_batch)} | stats.record()
    answers: dict[AnswerKey, str] = {}
    lines = []
    for k in keys:
        if k in reused:
            text: str | None = reused[k]
            error, model = None, f"from {config.answers}"
        else:
            c = completions[k.id]
            # The answer after any inline thought (harness/scoring/reasoning.py); a thought never closed: none.
            answer = split_reply(c.text, None, parse_tags(config.think_tags)).answer
            text = clean_answer(answer) if c.error is None else None
            error, model = c.error or (None if text else "empty answer"), acfg.model
        if text:
            answers[k] = text
        lines.append(json.dumps(answer_record(k, text, model, error), ensure_ascii=False) + "\n")
    metrics["failed"] = len(keys) - len(answers)
    return answers, "".join(lines), metrics


def identity(config: RunConfig, prep: Prepared) -> dict[str, Any]:
    """What decides a qa run's answers, for config.json and its config_hash: the `identity` of both qa variants
    (harness/variants/base.py `Variant`)."""
    record: dict[str, Any] = {
        "answer_model": answer_config(config).model,
        "answer_backend": config.answer_backend,
        "answer_template_hashes": PromptRenderer(ANSWER_TEMPLATE).hashes(),
        "unique_answers": len(prepared_keys(prep)),
    }
    if config.answers is not None:
        record["answers_file_sha256"] = hashlib.sha256(read_bytes(Path(config.answers), "answers file")).hexdigest()
    return record


def keys_of(e: Example) -> tuple[AnswerKey, AnswerKey]:
    return AnswerKey(e.sentence1, e.condition), AnswerKey(e.sentence2, e.condition)


def prepared_keys(prep: Prepared) -> list[AnswerKey]:
    """Every unique (sentence, condition) a prepared run needs answered: its queries' and their shots'."""
    return answer_keys([q, *s] for q, s in zip(prep.queries, prep.shots, strict=True))


def spent(config: RunConfig, answer_metrics: dict[str, Any]) -> RunConfig:
    """The run's settings for its next step: one --max-cost for the whole run, the answers took their share."""
    cost = (answer_metrics.get("dispatch") or {}).get("spent_usd") or 0.0
    if config.api.max_cost is None:
        return config
    return dataclasses.replace(config, api=dataclasses.replace(config.api, max_cost=config.api.max_cost - cost))


def answer_step(config: RunConfig, prep: Prepared) -> tuple[RunConfig, dict[AnswerKey, str], str, dict[str, Any]]:
    """A run's answers (Figure 7 prompts, one per unique key), as `generate_answers` returns them, after the run's
    settings for its next step (`spent`)."""
    keys = prepared_keys(prep)
    answers, answers_file, metrics = generate_answers(
        config, keys, answer_requests(keys, PromptRenderer(ANSWER_TEMPLATE))
    )
    return spent(config, metrics), answers, answers_file, metrics


def template_or(config: RunConfig, default: str) -> str:
    """A qa variant's template: --template's choice of the prompting templates, else `default` (--template paper:
    the paper's, Tu et al.'s Figure 9 / 7, is ours)."""
    if config.template not in (None, PAPER):
        return template_name(describe_dataset(config.dataset).templates, config.instr, config.template)
    return default


def answer_estimate(config: RunConfig, prep: Prepared) -> Step:
    """The answer step as --dry-run counts it: every Figure 7 prompt, at the answer model's price."""
    acfg = answer_config(config)
    requests = answer_requests(prepared_keys(prep), PromptRenderer(ANSWER_TEMPLATE))
    return Step("answers", acfg, requests, price_of(acfg, None))


def ready(config: RunConfig, backend: Backend) -> Backend:
    """The scoring backend, once the answer model is known to be usable too (a missing key fails here, before
    any work); with --answers FILE no answer model is called."""
    if config.answers is None:
        make_answer_backend(config)
    return backend
