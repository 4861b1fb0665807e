"""Frozen dataclasses that cross module boundaries: one query's journey from CSV row to result line."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


class HarnessError(Exception):
    """A user-facing error: the CLI prints its message as one line and exits non-zero."""


@dataclass(frozen=True)
class Example:
    """One dataset row. `label` is None where the split hides it (C-STS test)."""

    id: str  # 0-based row position in its split file, as a string (the submission format's key)
    sentence1: str
    sentence2: str
    condition: str  # "" for STS-B
    label: float | None


@dataclass(frozen=True)
class Dataset:
    """A loaded split with the pool its shots come from and the facts needed to score it."""

    name: str  # "csts" | "stsb" | a user's dataset file's name (harness/datasets/__init__.py)
    split: str
    examples: tuple[Example, ...]
    pool: tuple[Example, ...]  # few-shot pool (the train split)
    label_range: tuple[float, float]
    file_hashes: dict[str, str] = field(default_factory=dict, compare=False)
    conditions: bool = False  # its items carry a condition (its description's `conditions`)


@dataclass(frozen=True)
class Request:
    """One prompt to send. Backends see only this: they know nothing of C-STS."""

    id: str
    prompt: str
    max_tokens: int = 20  # Deshpande et al. 2023, App. A.3: 20 generation tokens
    temperature: float = 0.0
    # The n-th asking of the same prompt (repeat-run agreement, harness/variants/reannotate.py): never sent, but
    # part of the cache key when not 0, so that repeats are answered anew rather than copied from the cache.
    sample: int = 0
    # An embedding request's first `unpooled` characters (an instruction) steer the encoder but are left out of its
    # pooling (Zhang et al. 2025 §3.1: only the encoded text's tokens are pooled); 0: every token is pooled. Sent
    # only to a backend that can (BACKENDS' `pools_text`), and part of the cache key when not 0.
    unpooled: int = 0


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0  # all of the reply, its reasoning included
    reasoning_tokens: int = 0  # of output_tokens, those the provider says were reasoning (OpenAI's hidden ones)
    # False: the reply gave no usable count (none, negative, not an integer, absurdly large; calling/backends/base.py
    # `reply_usage`): the counts above are 0, and --max-cost charges the request what it reserved (budget.py).
    reported: bool = True


@dataclass(frozen=True)
class RateLimit:
    """What a provider's rate-limit headers said with one reply (harness/calling/limits.py): per-minute limits,
    what remains of them, and seconds until they are whole again; None where a header was absent."""

    requests_limit: float | None = None
    requests_remaining: float | None = None
    requests_reset: float | None = None
    tokens_limit: float | None = None
    tokens_remaining: float | None = None
    tokens_reset: float | None = None


@dataclass(frozen=True)
class ServerQueue:
    """What a server said of its queue at one moment (vLLM's GET /metrics: harness/calling/backends/gauges.py): the
    requests it computes now and those that wait for a place among them, summed over the --base-url servers."""

    running: int
    waiting: int


@dataclass(frozen=True)
class Completion:
    """A backend's answer to one request; `error` set (and `text` None) when it failed for good.

    A refusal is an answer: `text` is "" (scored as invalid) and `refusal` holds what the model said.
    """

    request_id: str
    text: str | None
    error: str | None = None
    usage: Usage = Usage()
    cached: bool = False
    finish_reason: str | None = None  # "stop", "length", "content_filter", ... (Anthropic's mapped to these)
    refusal: str | None = None  # the provider flagged a refusal: its text (text is then "")
    served_model: str | None = None  # the `model` field of the reply: the snapshot that actually answered
    truncated: bool = False  # the reply was over the size cap and was cut (harness/calling/backends/base.py)
    deterministic_error: bool = False  # e.g. context_length_exceeded: a rerun would fail the same way
    # --scoring expected: {"0": p, ..., "10": p}, the first output position's probability of each integer
    # token (harness/scoring/expected.py); None when not asked for or the backend has no log-probabilities.
    score_probs: Mapping[str, float] | None = None
    # The thought the provider returned apart from the answer (a server's reasoning_content, Anthropic's thinking
    # blocks); `text` is then the answer. A thought inline in the text stays there (harness/scoring/reasoning.py).
    reasoning: str | None = None
    # A reply that came back (paid for) but could not be read: "code: detail" (harness/calling/backends/base.py
    # `read_reply`); `text` is then "" (scored invalid, reason "malformed") and `raw` keeps the body as received
    # (key redacted, capped), so the answer is cached and never bought again.
    malformed: str | None = None
    raw: str | None = field(default=None, repr=False)
    # The provider's rate-limit headers on this reply, for dispatch's limiter; never stored or compared.
    rate_limit: RateLimit | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, kw_only=True)
class Scored:
    """One line of samples.jsonl. Built by keyword (22 fields, most of them optional); the two shapes several
    variants share have their constructors: `unanswered` (a dry run's line) and `cosine` (an embedding variant's)."""

    id: str
    prompt: str
    shot_ids: tuple[str, ...]
    output: str | None  # the answer: what the first-number rule read (a thought split off into `reasoning`)
    parsed: float | None
    valid: bool
    prediction: float | None  # parsed value, or the seeded fallback draw; None only on error/dry run
    label: float | None
    error: str | None = None
    pair: str | None = None  # C-STS: id of the first row with this sentence pair (bootstrap clusters); else None
    reason: str | None = None  # parsing.reason_code: number, no-number, echo, out-of-range, refusal, cut-off, error
    parsed_strict: float | None = None  # --parse strict only: parsing.strict_score of the output
    prediction_strict: float | None = None  # --parse strict only: parsed_strict, or the same seeded fallback draw
    finish_reason: str | None = None  # why the model stopped ("stop", "length", ...); None: not reported
    usage: dict[str, int] | None = None  # {"input_tokens", "output_tokens"} of this answer; None: no answer
    served_model: str | None = None  # the model id the server reported
    refusal: str | None = None  # the refusal text, when the provider flagged one (the output is then invalid)
    truncated: bool = False  # the reply was cut at the size cap
    expected: float | None = None  # --scoring expected: probability-weighted score (never mixed with prediction)
    expected_mass: float | None = None  # the probability the valid score tokens had before renormalising
    # --scoring expected: score-token values dropped as no log-probability (NaN, +inf, > 0), or all of them when
    # they summed past 1 (harness/scoring/expected.py collect_score_probs); None when none was
    expected_dropped: int | None = None
    reasoning: str | None = None  # the thought before the answer (`output` is then the answer only)
    # --repeats K > 1 (harness/scoring/repeats.py): {"values": the K parsed scores (None: no number), "valid",
    # "sd", "range", "outputs": the K answers}; `parsed`/`prediction` are then the --reduce of the valid values.
    repeats: Mapping[str, Any] | None = None

    @classmethod
    def unanswered(
        cls, id: str, prompt: str, label: float | None, pair: str | None, shot_ids: tuple[str, ...] = ()
    ) -> Scored:
        """A dry run's line: no answer yet, so no prediction (and never a fallback draw)."""
        return cls(
            id=id,
            prompt=prompt,
            shot_ids=shot_ids,
            output=None,
            parsed=None,
            valid=False,
            prediction=None,
            label=label,
            pair=pair,
        )

    @classmethod
    def cosine(
        cls,
        id: str,
        prompt: str,
        label: float | None,
        pair: str | None,
        similarity: float | None,
        error: str | None = None,
        shot_ids: tuple[str, ...] = (),
    ) -> Scored:
        """An embedding variant's line: the cosine is the prediction (always a number, in [-1, 1]); with `error`
        (no embedding, no answer to embed) there is none."""
        ok = error is None and similarity is not None
        return cls(
            id=id,
            prompt=prompt,
            shot_ids=shot_ids,
            output=f"{similarity:.6f}" if ok else None,
            parsed=similarity if ok else None,
            valid=ok,
            prediction=similarity if ok else None,
            label=label,
            error=error,
            pair=pair,
            reason="number" if ok else "error",
        )
