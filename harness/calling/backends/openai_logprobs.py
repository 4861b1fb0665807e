"""First-token log-probabilities over the OpenAI wire (`--scoring expected`), pure: what to ask, how to read it.

Chat Completions take `logprobs: true, top_logprobs: N` (OpenAI allows N <= 20) and answer
`choice.logprobs.content[i] = {token, logprob, top_logprobs: [{token, logprob}]}`. The legacy Completions
endpoint takes `logprobs: N` and answers `choice.logprobs.top_logprobs[i] = {token: logprob}` beside
`tokens[i]` and `token_logprobs[i]`. Servers mix the two (llama.cpp's own server answers /v1/completions in
the chat shape), so either shape is read from either endpoint. Only the answer's first output position counts
(the first position, unless the reply thinks first: never a thought's token); its
alternatives beyond the top N are unknown, so a score token outside them counts as missing mass, as with
vLLM (harness/scoring/expected.py `expected_mass`). A reply without log-probabilities gives None, which
the metrics count apart from a model that put no mass on the scores.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from harness.scoring.expected import collect_score_probs
from harness.scoring.reasoning import answer_start

TOP_LOGPROBS = 20  # OpenAI's cap on top_logprobs, and vLLM's default max_logprobs


def logprob_fields(chat: bool) -> dict[str, Any]:
    """The request fields that ask for the top TOP_LOGPROBS alternatives at each output position."""
    return {"logprobs": True, "top_logprobs": TOP_LOGPROBS} if chat else {"logprobs": TOP_LOGPROBS}


def score_probs_from(
    choice: dict[str, Any], text: str | None = None, thought: str | None = None
) -> dict[str, float] | None:
    """{"0": p, ..., "10": p} at the answer's first output position of one reply choice; None when the reply holds
    no log-probabilities for it (the server ignored the request, or the reply is empty). `text` and `thought`: the
    reply's answer text and any thought returned apart. A reply that thinks first (inline, or a thought whose tokens
    the log-probabilities spell) is read at its answer's first token (harness/scoring/reasoning.py answer_start),
    never at the thought's; {} (no score token seen) when that token cannot be told."""
    logprobs = choice.get("logprobs")
    at = answer_start(_pieces(logprobs), text, thought)
    if at is None:
        return {} if _position(logprobs, 0) is not None else None
    position = _position(logprobs, at)
    if position is None:
        return None
    return collect_score_probs(position, logprobs=True)


def _pieces(logprobs: Any) -> list[str]:
    """Each output position's chosen token text, in order, in either shape ("" where a position holds none)."""
    if not isinstance(logprobs, dict):
        return []
    content, tokens = logprobs.get("content"), logprobs.get("tokens")
    chosen = [e.get("token") if isinstance(e, dict) else None for e in content] if isinstance(content, list) else tokens
    return [t if isinstance(t, str) else "" for t in chosen] if isinstance(chosen, list) else []


def _position(logprobs: Any, index: int) -> list[tuple[str, float]] | None:
    """(token, log-probability) of one position's alternatives and its chosen token, each text once."""
    if not isinstance(logprobs, dict):
        return None
    content = logprobs.get("content")
    if isinstance(content, list):  # the chat shape
        if len(content) <= index or not isinstance(content[index], dict):
            return None
        chosen = content[index]
        alternatives = list(_entries(chosen.get("top_logprobs")))
        return _with_chosen(alternatives, chosen.get("token"), chosen.get("logprob"))
    top = logprobs.get("top_logprobs")
    if isinstance(top, list):  # the legacy shape
        if len(top) <= index or not isinstance(top[index], dict):
            return None
        alternatives = [(t, lp) for t, lp in top[index].items() if _number(lp)]
        tokens, chosen_lps = logprobs.get("tokens"), logprobs.get("token_logprobs")
        token = tokens[index] if isinstance(tokens, list) and len(tokens) > index else None
        lp = chosen_lps[index] if isinstance(chosen_lps, list) and len(chosen_lps) > index else None
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
