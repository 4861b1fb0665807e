"""Turn model text into a score by the reference rule, and draw the seeded fallback for invalid outputs."""

from __future__ import annotations

import functools
import math
import re

from harness.prompting.fewshot import query_rng

# Deshpande et al. 2023, App. A.3: the output is stripped of non-numeric characters and errant
# punctuation before the cast. In effect the first run of digits with an optional decimal part
# wins; a sign is dropped ("-1" -> 1.0) and a leading dot is ignored (".5" -> 5.0), as the
# reference code does (../shared/golden/parse_cases.jsonl).
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def parse_score(text: str | None) -> float | None:
    """The first number in the text, or None when there is none (an invalid output). A first number of 309 or more
    digits is past what a float holds: the reference's cast gives inf, which makes Pearson NaN; here it is invalid,
    and `reason_code` calls it out-of-range (issue 30)."""
    if not text:
        return None
    match = _NUMBER.search(text)
    return _finite(float(match.group())) if match else None


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def overflows(text: str | None) -> bool:
    """Whether the text's first number is too large for a float (see parse_score)."""
    match = _NUMBER.search(text) if text else None
    return match is not None and not math.isfinite(float(match.group()))


# Cached: the cells of a sweep, and a report's runs, ask for the same (seed, query) draws over and over, and each
# costs a sha256 and a Random.
@functools.lru_cache(maxsize=1 << 18)
def fallback_score(seed: int, query_id: str, label_range: tuple[float, float]) -> float:
    """Deshpande et al. 2023, App. A.3: invalid -> y ~ U[lo, hi], seeded per (seed, query) for reruns."""
    lo, hi = label_range
    return query_rng(seed, "fallback", query_id).uniform(lo, hi)


def in_range(value: float, label_range: tuple[float, float]) -> bool:
    return label_range[0] <= value <= label_range[1]


# --- diagnostics beside the paper's rule (never a replacement for it) -----------------------------

REASONS = ("number", "no-number", "echo", "out-of-range", "refusal", "cut-off", "thinking-cut-off", "error")

# Keys the prompt templates write ("Input:", "Sentence 1:", "Condition:", "Answer 2:", "Definition:" ...).
_KEY = re.compile(r"\b(?:input|sentence\s*[12]|answer\s*[12]|condition|definition|question)\s*:", re.I)
# The digit of a numbered key: the "1" of "Sentence 1:" (spaces before the colon allowed).
_KEY_DIGIT_BEFORE = re.compile(r"\b(?:sentence|answer)\s*$", re.I)
_COLON_AFTER = re.compile(r"\s*:")
# A scale restated ("On a scale between 0 and 5", "a score of 1 to 5"): the instructions' own words, with the
# number the paper's rule reads as the scale's lower bound.
_SCALE_BEFORE = re.compile(r"\b(?:scale|score)\s+(?:between|of|from)\s*$", re.I)
_SCALE_AFTER = re.compile(r"\s*(?:and|to|-)\s*\d")
# Words after which a number is the model's answer: "Answer: 4", "Output: 4", "score 4", "is 4", "Rating: **2**".
_CUE = re.compile(r"\b(?:answer|output|score|rating|similarity|is)\s*[:=]?\s*[*\"'(\[]*$", re.I)


def is_echo(text: str) -> bool:
    """Whether the first number (the one the paper's rule reads) comes from the prompt echoed back.

    Precisely: with m the first-number match, the reply is an echo when
      (a) m is the digit of a numbered prompt key, "Sentence 1:", "Sentence 2:", "Answer 1:" or "Answer 2:"
          (the key word right before it, a colon right after it); or
      (b) a prompt key ("Input:", "Sentence 1:", "Sentence 2:", "Condition:", "Answer 1:", "Answer 2:",
          "Definition:", "Question:") occurs before m, with no answer cue ("Output:", "Answer:", "Score:",
          "Rating:") between the last such key and m: the number sits inside echoed sentence or condition text; or
      (c) m opens a scale the reply restates, "scale between 0 and 5", "score of 1 to 5": the instruction echoed.
    Small models often reply "Sentence 1: ..." (issue 15: 64 of 93 "valid" answers in one run), which the
    paper's rule reads as 1.0; Gemma-3-270M replied "On a scale between 0 and 5, how similar ..." (issue 42),
    read as 0.0.
    """
    m = _NUMBER.search(text)
    if m is None:
        return False
    before = text[: m.start()]
    if _SCALE_BEFORE.search(before) and _SCALE_AFTER.match(text, m.end()):
        return True
    if _KEY_DIGIT_BEFORE.search(before) and _COLON_AFTER.match(text, m.end()):
        return True
    keys = list(_KEY.finditer(before))
    if not keys:
        return False
    after_key = before[keys[-1].end() :]
    return re.search(r"\b(?:output|answer|score|rating)\s*:", after_key, re.I) is None


@functools.lru_cache(maxsize=1 << 16)  # pure; a sweep's cells, and a baseline's answers, repeat their replies
def reason_code(
    text: str | None,
    parsed: float | None,
    label_range: tuple[float, float],
    finish_reason: str | None = None,
    refusal: str | None = None,
    error: str | None = None,
    thinking_cut_off: bool = False,
) -> str:
    """Why a reply got the score it got; a diagnostic beside the paper's rule, which stays the metric.

    error: the request failed (no prediction). refusal: the model declined (a refusal field, or the
    provider's content filter) and gave no number. cut-off: no number and the reply hit its token budget
    (finish_reason "length"). thinking-cut-off: the budget ran out while the model was still thinking
    (harness/scoring/reasoning.py thinking_cut_off; `text` is the answer, empty). no-number: no number
    otherwise. echo: a number, but from the prompt echoed back (is_echo). out-of-range: a number outside the
    label range. number: a number in range.
    """
    if error is not None:
        return "error"
    if thinking_cut_off:
        return "thinking-cut-off"
    if parsed is None:
        if overflows(text):  # a number past a float's range (parse_score)
            return "out-of-range"
        if refusal is not None or finish_reason == "content_filter":
            return "refusal"
        return "cut-off" if finish_reason == "length" else "no-number"
    if text is not None and is_echo(text):
        return "echo"
    return "number" if in_range(parsed, label_range) else "out-of-range"


def strict_score(text: str | None) -> float | None:
    """`--parse strict`: the paper's first number, kept only when it stands alone or follows an answer cue.

    Stands alone: it opens the reply (after spaces, quotes, brackets or "**") and ends it, its line, or its
    sentence, optionally followed by "/5" or "out of 5" ("4", "  3\\n", "4.0.", "[4]", "4 out of 5.",
    "0.5\\nA slow loris"). Follows a cue: right after "Answer", "Output", "Score", "Rating", "similarity"
    or "is", with an optional ":" or "=" ("The Answer is 2.0.", "Score: 3/5", "Rating: **2**"). Anything
    else is invalid here ("-1", ".5", "3-4", "between 1 and 5: 3", "Sentence 1: ...", any echo), though the
    paper's rule reads a number from it. Reported as a second, clearly named metric set; the paper's metric
    never changes.
    """
    if not text:
        return None
    m = _NUMBER.search(text)
    if m is None or is_echo(text):
        return None
    before, after = text[: m.start()], text[m.end() :]
    opens = re.fullmatch(r"[\s*\"'(\[]*", before) is not None
    after = re.sub(r"^\s*(?:/|out of)\s*\d+(?:\.\d+)?", "", after)  # "4/5", "4 out of 5"
    ends = re.match(r"[*\"')\]]*(?:[.!]?\s*$|[.!]?\s*\n|[.!]\s)", after) is not None
    if (opens and ends) or _CUE.search(before):
        return _finite(float(m.group()))
    return None
