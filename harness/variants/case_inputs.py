"""The texts the embedding protocol (Zhang et al. 2025, "CASE") embeds for one example, per encoding setting.

Table 1's four settings, each a pair of vectors compared by cosine:
  cond    f(c; I(s))                   the condition encoded given the sentence (§3.1, item 1)
  cond-c  f(c; I(s)) - f(c; I(∅))      ... minus the condition's own embedding (eq. 1, the paper's best)
  sent    f(s; I(c))                   the sentence encoded given the condition (§3.1, item 2)
  sent-c  f(s; I(c)) - f(c; I(∅))      ... minus the same condition embedding (§4.2: "For each setting")
and `plain`, f(s): the sentence alone (the unconditional cos(s1, s2) of Table 5), not a Table 1 setting, and
the only one STS-B has (it has no conditions).

Two input styles, as the paper's two encoder families (§4.2):
  instruct  LLM encoders: the instruction I(·) and the text to encode joined as "Instruct: {I}\\nQuery: {text}",
            the format NV-Embed-v2, SFR-Embedding-Mistral, gte-Qwen2-instruct and E5-instruct all document (the
            paper names the instruction, not how it is joined: our choice). I(s) is the paper's sentence verbatim;
            f(s; I(c)) swaps the two ("we swap the sentence and the condition"): our wording of the swap.
  concat    MLM encoders (SimCSE rows): cond = CONC(c+s), sent = CONC(s+c), joined by one space, and f(c; I(∅))
            the condition alone (the paper does not say how it concatenates: our choice).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.config.sections import CASE_SETTINGS
from harness.config.settings import RunConfig
from harness.datasets.choose import describe_dataset
from harness.types import Example

SETTINGS = CASE_SETTINGS  # as --case-setting declares them (harness/config/sections.py)
TABLE1_SETTINGS = tuple(s for s in SETTINGS if s != "plain")  # Zhang et al. 2025, Table 1

# Zhang et al. 2025, §3.1: I(s), and I(∅) for the condition's own embedding.
COND_GIVEN_SENT = "Retrieve semantically similar texts to a given Condition, given the Sentence : {s}"
SENT_GIVEN_COND = "Retrieve semantically similar texts to a given Sentence, given the Condition : {c}"  # the swap
UNCONDITIONAL = "Retrieve semantically similar texts"


def instruction_part(instruction: str) -> str:
    """What comes before the encoded text: the part that only steers attention (§3.1), left out of pooling where
    the encoder allows it (--case-pooling text)."""
    return f"Instruct: {instruction}\nQuery: "


def instructed(instruction: str, text: str) -> str:
    return instruction_part(instruction) + text


@dataclass(frozen=True)
class Texts:
    """What one side (sentence s under condition c) of an example needs embedded, and for each text the length of
    its instruction part (characters before the encoded text; 0: none, as concat and the plain sentence)."""

    cond: str  # f(c; I(s)) or CONC(c+s)
    sent: str  # f(s; I(c)) or CONC(s+c)
    base: str  # f(c; I(∅)) or c alone
    plain: str  # s alone
    prefixes: tuple[int, int, int] = (0, 0, 0)  # of cond, sent, base

    def prefix(self, text: str) -> int:
        """The instruction part's length of one of these texts."""
        for mine, n in zip((self.cond, self.sent, self.base), self.prefixes, strict=True):
            if text == mine:
                return n
        return 0


def texts_for(sentence: str, condition: str, style: str) -> Texts:
    if style == "instruct":
        parts = (COND_GIVEN_SENT.format(s=sentence), SENT_GIVEN_COND.format(c=condition), UNCONDITIONAL)
        return Texts(
            instructed(parts[0], condition),
            instructed(parts[1], sentence),
            instructed(parts[2], condition),
            sentence,
            (len(instruction_part(parts[0])), len(instruction_part(parts[1])), len(instruction_part(parts[2]))),
        )
    if style == "concat":
        return Texts(f"{condition} {sentence}", f"{sentence} {condition}", condition, sentence)
    raise ValueError(f"unknown input style {style!r}")


def settings_for(config: RunConfig) -> tuple[str, ...]:
    """The settings the run's dataset has: one without conditions (STS-B) only the plain sentence embedding."""
    return SETTINGS if describe_dataset(config.dataset).conditions else ("plain",)


def sides(example: Example, style: str) -> tuple[Texts, Texts]:
    return texts_for(example.sentence1, example.condition, style), texts_for(
        example.sentence2, example.condition, style
    )


def needed(example: Example, style: str, settings: tuple[str, ...]) -> dict[str, int]:
    """Every distinct text the settings need for this example, with the length of its instruction part."""
    out: dict[str, int] = {}
    for t in sides(example, style):
        for s in settings:
            main, minus = vector_texts(t, s)
            for text in (main, minus):
                if text is not None:
                    out.setdefault(text, t.prefix(text))
    return out


def vector_texts(t: Texts, setting: str) -> tuple[str, str | None]:
    """(the text whose embedding the setting uses, the text whose embedding it subtracts, or None)."""
    if setting == "plain":
        return t.plain, None
    main = t.cond if setting.startswith("cond") else t.sent
    return main, t.base if setting.endswith("-c") else None


def primary_setting(config: RunConfig) -> str:
    """The setting whose cosines are the samples' predictions: --case-setting, else the paper's best (cond-c)."""
    if not describe_dataset(config.dataset).conditions:
        return "plain"
    return config.embed.setting or "cond-c"


def side_vectors(ex: Example, style: str, setting: str, vectors: Mapping[str, Any]) -> tuple[Any, Any] | str:
    """The two vectors a setting compares for one example, or the text that has no embedding."""
    out = []
    for t in sides(ex, style):
        main, minus = vector_texts(t, setting)
        for text in (main, minus):
            if text is not None and text not in vectors:
                return text
        out.append(vectors[main] - vectors[minus] if minus is not None else vectors[main])
    return out[0], out[1]
