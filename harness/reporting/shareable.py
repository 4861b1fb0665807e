"""`report --shareable`: a run with every text that may hold C-STS sentences or conditions taken out (the release
terms forbid sharing them), its numbers, reasons and ids kept, so every table and plot is the same.

Out: prompts, replies (a model may echo its prompt), thoughts, refusals, and every other string a server wrote: an
error message keeps only the words the harness itself put before the server's (`HTTP 400`, `bad_request`, `gave up
after 3 tries`), because a server's message may quote the prompt (a validation error's `input`); the `model` and
`finish_reason` a server reported are kept only where they are on an allow-list of shapes that cannot carry a
sentence (issue 41: `a_man_plays_the_guitar` has a model id's characters): a stop reason one of the words providers
use, a model the run's own model name, alone or with a version after it (`gpt-4o-2024-08-06`) or an owner before it.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from harness.datasets.choose import run_description
from harness.results.read import Run

LEFT_OUT = "[C-STS text left out: shareable report]"

# The harness's own words at the start of an error message, before any server's (harness/calling: attempts.py,
# backends/base.py status_error and its kinds, dispatch.py, transport.py, batch/*.py).
_HEAD = re.compile(
    r"(?:(?:gave up after \d+ tr(?:y|ies)|not retried: the run stopped|HTTP \d{3}|malformed (?:reply|response)"
    r"|connection error|unexpected [A-Za-z_][\w.]*|context_length_exceeded|request_too_large|bad_request"
    r"|unencodable_prompt|not sent): )+"
)
# Whole messages the harness writes with nothing of a server's or a prompt's in them.
_OURS = re.compile(
    r"not sent: --max-cost \$[\d.e+-]+ would be exceeded|request timed out|no answer within [\d.e+-]+s \(--timeout\)"
    r"|backend [\w-]+ returned no completion|no answer in the cache after its batch ended"
)
# Every stop reason the providers and engines the harness reads write (OpenAI, Anthropic, vLLM, transformers).
STOP_REASONS = frozenset(
    {"stop", "length", "content_filter", "tool_calls", "function_call", "end_turn", "max_tokens", "stop_sequence",
     "tool_use", "refusal", "pause_turn", "model_context_window_exceeded", "abort", "eos", "error"}
)  # fmt: skip
_VERSION = re.compile(r"[-:@.][0-9][\w.:-]{0,40}")  # after the run's model name: -2024-08-06, :latest is not one
_OWNER = re.compile(r"[\w.-]{1,60}/")  # before it: meta-llama/


def error_head(error: str | None) -> str | None:
    """An error message as a shareable report shows it: the harness's own words, the rest left out."""
    if error is None or _OURS.fullmatch(error):
        return error
    head = _HEAD.match(error)
    return (head.group(0) if head else "") + LEFT_OUT


def stop_reason(value: Any) -> Any:
    """A finish reason as a shareable report shows it: one of STOP_REASONS, else LEFT_OUT."""
    return value if not isinstance(value, str) or value in STOP_REASONS else LEFT_OUT


def served_model(value: Any, models: tuple[str, ...]) -> Any:
    """A served model as a shareable report shows it: one of the run's `models`, alone, with a version after it
    or an owner before it; else LEFT_OUT."""
    if not isinstance(value, str):
        return value
    for model in (m for m in models if m):
        at = value.find(model)
        if at < 0 or not (at == 0 or _OWNER.fullmatch(value[:at])):
            continue
        rest = value[at + len(model) :]
        if not rest or _VERSION.fullmatch(rest):
            return value
    return LEFT_OUT


def without_csts_text(run: Run) -> Run:
    """The run with every text that may hold C-STS sentences or conditions replaced by a marker (above)."""
    if not run_description(run.config).private:
        return run  # STS-B's licence (CC BY-SA) allows sharing its text; a user's dataset file says (`private`)
    models = tuple(str(run.config.get(k) or "") for k in ("model", "answer_model"))

    def gone(text: str | None) -> str | None:
        return None if text is None else LEFT_OUT

    samples = tuple(
        dataclasses.replace(
            s,
            prompt=LEFT_OUT,
            output=gone(s.output),
            reasoning=gone(s.reasoning),
            refusal=gone(s.refusal),
            error=error_head(s.error),
            served_model=served_model(s.served_model, models),
            finish_reason=stop_reason(s.finish_reason),
            # --repeats: the K replies out, their scores and spread kept
            repeats=None if s.repeats is None else {**s.repeats, "outputs": [gone(o) for o in s.repeats["outputs"]]},
        )
        for s in run.samples
    )
    extras = tuple(
        e
        | {
            "refusal": LEFT_OUT if e.get("refusal") else None,
            "served_model": served_model(e.get("served_model"), models),
            "finish_reason": stop_reason(e.get("finish_reason")),
        }
        for e in run.extras
    )
    return dataclasses.replace(run, samples=samples, extras=extras)
