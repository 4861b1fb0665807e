"""First-token log-probabilities over the OpenAI wire (`--scoring expected`), pure: what to ask, how to read it.

Chat Completions take `logprobs: true, top_logprobs: N` (OpenAI allows N <= 20) and answer
`choice.logprobs.content[i] = {token, logprob, top_logprobs: [{token, logprob}]}`. The legacy Completions
endpoint takes `logprobs: N` and answers `choice.logprobs.top_logprobs[i] = {token: logprob}` beside
`tokens[i]` and `token_logprobs[i]`. Servers mix the two (llama.cpp's own server answers /v1/completions in
the chat shape), so either shape is read from either endpoint. Only the first output position counts; its
alternatives beyond the top N are unknown, so a score token outside them counts as missing mass, as with
vLLM (harness/scoring/expected.py `expected_mass`). A reply without log-probabilities gives None, which
the metrics count apart from a model that put no mass on the scores.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from harness.scoring.expected import collect_score_probs

TOP_LOGPROBS = 20  # OpenAI's cap on top_logprobs, and vLLM's default max_logprobs


def logprob_fields(chat: bool) -> dict[str, Any]:
    """The request fields that ask for the top TOP_LOGPROBS alternatives at each output position."""
    return {"logprobs": True, "top_logprobs": TOP_LOGPROBS} if chat else {"logprobs": TOP_LOGPROBS}


def score_probs_from(choice: dict[str, Any]) -> dict[str, float] | None:
    """{"0": p, ..., "10": p} at the first output position of one reply choice; None when the reply holds
    no log-probabilities for it (the server ignored the request, or the reply is empty)."""
    first = _first_position(choice.get("logprobs"))
    if first is None:
        return None
    return collect_score_probs(first, logprobs=True)


def _first_position(logprobs: Any) -> list[tuple[str, float]] | None:
    """(token, log-probability) of the first position's alternatives and its chosen token, each text once."""
    if not isinstance(logprobs, dict):
        return None
    content = logprobs.get("content")
    if isinstance(content, list):  # the chat shape
        if not content or not isinstance(content[0], dict):
            return None
        chosen = content[0]
        alternatives = list(_entries(chosen.get("top_logprobs")))
        return _with_chosen(alternatives, chosen.get("token"), chosen.get("logprob"))
    top = logprobs.get("top_logprobs")
    if isinstance(top, list):  # the legacy shape
        if not top or not isinstance(top[0], dict):
            return None
        alternatives = [(t, lp) for t, lp in top[0].items() if _number(lp)]
        tokens, chosen_lps = logprobs.get("tokens"), logprobs.get("token_logprobs")
        token = tokens[0] if isinstance(tokens, list) and tokens else None
        lp = chosen_lps[0] if isinstance(chosen_lps, list) and chosen_lps else None
        return _with_chosen(alternatives, token, lp)
    return None


def _entries(items: Any) -> Iterator[tuple[str, float]]:
    for item in items if isinstance(items, list) else ():
        if isinstance(item, dict) and isinstance(item.get("token"), str) and _number(item.get("logprob")):
            yield item["token"], item["logprob"]


def _with_chosen(alternatives: list[tuple[str, float]], token: Any, logprob: Any) -> list[tuple[str, float]]:
    """The chosen token joins its alternatives when they leave it out (top_logprobs: 0, or a server's own list)."""
    if isinstance(token, str) and _number(logprob) and token not in {t for t, _ in alternatives}:
        alternatives.append((token, logprob))
    return alternatives


def _number(value: Any) -> bool:
    """A number, never a bool; whether it can be a log-probability (NaN, +Infinity, > 0: no) is decided, and what
    is dropped counted, by collect_score_probs (harness/scoring/expected.py)."""
    return isinstance(value, int | float) and not isinstance(value, bool)
