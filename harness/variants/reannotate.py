"""LLM re-annotation of C-STS (Zhang et al. 2025, §2, App. D-E): optionally each condition rewritten (Figure 3),
then each pair rated under its condition (Figure 4, 5-shot, JSON out), `repeats` times; the replies read by
harness/scoring/reannotation.py. Both steps go through the usual calling layer (any backend, the response cache,
--max-cost, --batch); harness/cli/reannotate.py writes the labels file, the replies and the agreement."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.calling.backends import BACKENDS
from harness.calling.backends.base import Backend, RemoteBackend
from harness.calling.backends.choose import backend_name, make_backend
from harness.calling.dispatch import call
from harness.calling.estimate import Step, dry_run_estimate
from harness.calling.options import DispatchStats, dispatch_options
from harness.calling.pricing import price_of, usage
from harness.config.settings import RunConfig
from harness.inputs import read_text
from harness.prompting.render import PromptRenderer
from harness.scoring.reannotation import Reading, combined_label, read_condition, read_rating
from harness.scoring.reasoning import parse_tags, split_reply
from harness.types import Completion, Example, HarnessError, Request
from harness.variants.answers import spent

CONDITION_TEMPLATE = "reannotate/condition.j2"  # Figure 3
RATING_TEMPLATE = "reannotate/rating.j2"  # Figure 4
SHOTS_FILE = Path(__file__).parents[1] / "data" / "reannotate-shots.json"  # synthetic, one per rating 1-5
# The paper gives no output budget; a JSON object with a one-sentence justification is some 40-80 tokens.
MAX_TOKENS = 160


@dataclass(frozen=True)
class Settings:
    """What the reannotate command asks beyond the calling options (RunConfig)."""

    rewrite_conditions: bool = False
    repeats: int = 1
    temperature: float = 0.0
    with_original: bool = False  # the label: the mean of the ratings and the original label (Zhang et al.'s V())
    # --conditions FILE: each row rated under the condition another run rewrote (Zhang et al.: GPT-4o's, rated by
    # GPT-4o and Claude alike); uid -> condition, for every row rated
    given_conditions: dict[str, str] | None = None


@dataclass(frozen=True)
class Outcome:
    """Every reply read, and what they make: per-uid labels (None: no valid rating) and conditions."""

    examples: tuple[Example, ...]  # the rated rows, with their original conditions
    conditions: dict[str, str] | None  # uid -> the condition rated under (None: not rewritten)
    condition_readings: dict[str, Reading]
    ratings: list[list[int | None]]  # one row per repeat, one column per example
    rating_readings: list[Reading]
    labels: dict[str, int | None]
    replies: list[dict[str, Any]]  # replies.jsonl lines
    metrics: dict[str, Any] = field(default_factory=dict)  # usage and dispatch of each step

    @property
    def errors(self) -> int:
        steps = [*self.condition_readings.values(), *self.rating_readings]
        return sum(r.status == "error" for r in steps)


def shot_views(path: Path = SHOTS_FILE) -> list[dict[str, Any]]:
    """The synthetic shots, each with the reply Figure 4's examples show: {"rating": N, "justification": "..."}."""
    try:
        shots = json.loads(read_text(path, "shots file"))["shots"]
        return [
            {
                "sentence1": s["sentence1"],
                "sentence2": s["sentence2"],
                "condition": s["condition"],
                "reply": json.dumps({"rating": s["rating"], "justification": s["justification"]}),
            }
            for s in shots
        ]
    except (json.JSONDecodeError, KeyError, TypeError) as e:
        raise HarnessError(f"{path}: not a shots file ({type(e).__name__}: {e})") from None


def condition_requests(examples: Sequence[Example], renderer: PromptRenderer, max_tokens: int) -> list[Request]:
    """One Figure 3 prompt per row (the prompt shows the row's label, so a row, not a condition, is the unit)."""
    return [Request(f"cond-{e.id}", renderer.render(e, ()), max_tokens=max_tokens) for e in examples]


def rating_requests(
    examples: Sequence[Example],
    conditions: Mapping[str, str],
    shots: Sequence[Mapping[str, Any]],
    renderer: PromptRenderer,
    settings: Settings,
    max_tokens: int,
) -> list[list[Request]]:
    """Figure 4 prompts: one list per repeat; a repeat's requests differ from the first only in `sample`."""
    prompts = [renderer.render(e, shots, condition=conditions.get(e.id, e.condition)) for e in examples]  # type: ignore[arg-type]
    return [
        [
            Request(f"rate-{e.id}-{k}", p, max_tokens=max_tokens, temperature=settings.temperature, sample=k)
            for e, p in zip(examples, prompts, strict=True)
        ]
        for k in range(settings.repeats)
    ]


def check(config: RunConfig, settings: Settings) -> None:
    """What the command needs beyond the run's own checks: a language model, a split with conditions."""
    if settings.repeats < 1:
        raise HarnessError(f"--repeats must be at least 1, got {settings.repeats}")
    if settings.temperature < 0:
        raise HarnessError(f"--temperature must be at least 0, got {settings.temperature}")
    if config.dataset != "csts":
        raise HarnessError("reannotate rates C-STS rows (a condition per pair); STS-B has no conditions")
    kind = BACKENDS[name].kind if (name := backend_name(config)) in BACKENDS else None
    if kind in ("baseline", "embedder"):
        raise HarnessError(f"reannotate needs a language model that writes JSON, not the {name} backend")


def estimate(config: RunConfig, settings: Settings, examples: Sequence[Example]) -> dict[str, Any]:
    """--dry-run: every prompt rendered (ratings under the original conditions where rewriting would come first)."""
    price = price_of(config, None)
    steps = []
    if settings.rewrite_conditions:
        rendered = condition_requests(examples, PromptRenderer(CONDITION_TEMPLATE), config.max_tokens)
        steps.append(Step("conditions", config, rendered, price))
    given = settings.given_conditions or {}
    ratings = rating_requests(
        examples, given, shot_views(), PromptRenderer(RATING_TEMPLATE), settings, config.max_tokens
    )
    steps.append(Step("ratings", config, [r for repeat in ratings for r in repeat], price))
    return dry_run_estimate(steps, price)


def _ask(
    config: RunConfig, backend: Backend, requests: Sequence[Request], desc: str
) -> tuple[dict[str, Completion], dict[str, Any]]:
    price = price_of(config, backend)
    stats = DispatchStats()
    completions = call(backend, requests, dispatch_options(config, price), stats, desc=desc).completions
    return completions, {"usage": usage(completions, price, stats.paid_by_batch)} | stats.record()


def _answer(config: RunConfig, c: Completion) -> str | None:
    """The reply after any inline thought (harness/scoring/reasoning.py)."""
    return split_reply(c.text, None, parse_tags(config.think_tags)).answer if c.error is None else None


def _reply(step: str, e: Example, repeat: int | None, c: Completion, text: str | None, r: Reading) -> dict[str, Any]:
    return {
        "step": step,
        "uid": e.id,
        "repeat": repeat,
        "reply": c.text,
        "answer": text if text != c.text else None,  # only when a thought was split off
        "status": r.status,
        "value": r.value,
        "justification": r.justification,
        "error": c.error,
        "cached": c.cached,
    }


def reannotate(config: RunConfig, settings: Settings, examples: Sequence[Example]) -> Outcome:
    """Both steps, through one backend; --max-cost covers them together."""
    check(config, settings)
    examples = tuple(examples)
    backend = make_backend(config)  # built before any work: a missing key or engine fails here
    replies: list[dict[str, Any]] = []
    metrics: dict[str, Any] = {}
    readings: dict[str, Reading] = {}
    conditions: dict[str, str] | None = None
    if settings.rewrite_conditions:
        requests = condition_requests(examples, PromptRenderer(CONDITION_TEMPLATE), config.max_tokens)
        completions, metrics["conditions"] = _ask(config, backend, requests, f"conditions ({config.model})")
        config = spent(config, metrics["conditions"])
        conditions = {}
        for e, req in zip(examples, requests, strict=True):
            c = completions[req.id]
            text = _answer(config, c)
            readings[e.id] = r = read_condition(text, c.error, req.prompt)
            # A condition the model did not give back stays as it was (counted: condition_readings).
            conditions[e.id] = str(r.value) if r.valid else e.condition
            replies.append(_reply("condition", e, None, c, text, r))
    elif settings.given_conditions is not None:  # another run's rewrite: no condition step here
        conditions = {e.id: settings.given_conditions[e.id] for e in examples}
    renderer = PromptRenderer(RATING_TEMPLATE)
    repeats = rating_requests(examples, conditions or {}, shot_views(), renderer, settings, config.max_tokens)
    flat = [r for repeat in repeats for r in repeat]
    if settings.rewrite_conditions and isinstance(backend, RemoteBackend):
        backend = make_backend(config)  # an API backend per step: a step closes its clients when it ends
    completions, metrics["ratings"] = _ask(config, backend, flat, f"ratings ({config.model})")
    ratings: list[list[int | None]] = []
    rating_readings = []
    for k, repeat in enumerate(repeats):
        row: list[int | None] = []
        for e, req in zip(examples, repeat, strict=True):
            c = completions[req.id]
            text = _answer(config, c)
            r = read_rating(text, c.error, req.prompt)
            rating_readings.append(r)
            row.append(r.value if isinstance(r.value, int) else None)
            replies.append(_reply("rating", e, k, c, text, r))
        ratings.append(row)
    labels = {
        e.id: combined_label([row[i] for row in ratings], e.label if settings.with_original else None)
        for i, e in enumerate(examples)
    }
    return Outcome(examples, conditions, readings, ratings, rating_readings, labels, replies, metrics)
