"""Published numbers (Deshpande et al. 2023 Tables 4, 11, 12; Tu et al. 2024 Table 4; Zhang et al. 2025 "CASE"
Tables 1, 3, 4 and 10) and our model ids for them. Table 10's rows name the encoder's pooling method in their variant
(case-<setting>-pool-latent|last|average): App. D, the paper's numbers move with it."""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.datasets.labels import SUBSET_SPLITS
from harness.reporting.paper_settings import CHAT_MODELS, assumed, differences, uncertain
from harness.types import HarnessError

# Vendored as package data (beside the bundled STS-B), so `report` finds it from any working directory and
# in a non-editable install; results/ is for run outputs. Source: ../shared/paper_results.csv.
PAPER_RESULTS = Path(__file__).parents[1] / "data" / "paper_results.csv"

# Published model name -> the model ids a run may have used for it. Explicit, so a match is never a guess.
# Deshpande et al. 2023 §4.2: gpt-3.5-turbo-0301 and gpt-4-0314 through the OpenAI API; the open models
# are the Hugging Face checkpoints of Flan-T5, Flan-UL2 and Tk-Instruct (the "-def" definition-only variants).
ALIASES: dict[str, tuple[str, ...]] = {
    # Tu et al. 2024 §4.1: gpt-3.5-turbo-1106 and gpt-4-0125-preview (their Table 8: gpt-3.5-turbo-0125). Each id
    # matches the model's rows in both papers; the snapshot a row used is judged apart (reporting/paper_settings.py
    # SNAPSHOTS), so a floating id or the other paper's snapshot is matched to the row and said not to be
    # comparable with it.
    "GPT-4": ("gpt-4-0314", "gpt-4", "gpt-4-0125-preview"),
    "ChatGPT-3.5": ("gpt-3.5-turbo-0301", "gpt-3.5-turbo", "gpt-3.5-turbo-1106", "gpt-3.5-turbo-0125"),
    # Table 4's name for the same model
    "GPT-3.5": ("gpt-3.5-turbo-0301", "gpt-3.5-turbo", "gpt-3.5-turbo-1106", "gpt-3.5-turbo-0125"),
    "Flan-T5-SMALL": ("google/flan-t5-small",),
    "Flan-T5-BASE": ("google/flan-t5-base",),
    "Flan-T5-LARGE": ("google/flan-t5-large",),
    "Flan-T5-XL": ("google/flan-t5-xl",),
    "Flan-T5-XXL": ("google/flan-t5-xxl",),
    "Flan-UL2": ("google/flan-ul2",),
    "Tk-Instruct-3B": ("allenai/tk-instruct-3b-def",),
    "Tk-Instruct-11B": ("allenai/tk-instruct-11b-def",),
    # Zhang et al. 2025 (CASE), Appendix A: the Hugging Face encoders behind Tables 1, 3 and 4
    "NV-Embed-v2": ("nvidia/NV-Embed-v2",),
    "SFR-Embedding-Mistral": ("Salesforce/SFR-Embedding-Mistral",),
    "gte-Qwen2-7B-instruct": ("Alibaba-NLP/gte-Qwen2-7B-instruct",),
    "multilingual-e5-large-instruct": ("intfloat/multilingual-e5-large-instruct",),
    "sup-simcse-roberta-large": ("princeton-nlp/sup-simcse-roberta-large",),
    "sup-simcse-bert-base-uncased": ("princeton-nlp/sup-simcse-bert-base-uncased",),
}
_BY_MODEL_ID = {model_id.lower(): name for name, ids in ALIASES.items() for model_id in ids}
# Items in each published setting's split (dataset, split as in paper_results.csv, labels): a run is compared
# with a published number only when it answered all of them. C-STS validation has 2,834 rows (test 4,732), 214 marked
# invalid by Tu et al. (left out under their labels); the 70/30 parts hold 1,834 / 786 of the 2,620 kept.
# Published splits that no run here has, and why: such a row is listed, never set beside a run of ours.
OTHER_SPLITS = {
    ("csts", "zhang2025-test-851", "zhang2025"): "Zhang et al. 2025's own 851-item test part of their re-annotation, "
    "which the harness does not have",
}
SPLIT_SIZES = {
    ("csts", "validation", "original"): 2834,
    ("csts", "test", "original"): 4732,  # Table 4 (labels hidden from us: no correlation of ours to set beside it)
    # (Zhang et al. 2025 score a 30% part of their own re-annotation: OTHER_SPLITS)
    ("csts", "validation", "reannotated"): 2620,
    ("stsb", "validation", "original"): 1500,
    **{
        ("csts", split, labels): n
        for split, n in ((SUBSET_SPLITS["reannotated-test"], 786), (SUBSET_SPLITS["reannotated-train"], 1834))
        for labels in ("original", "reannotated")
    },
}
# The protocol behind every published number (Deshpande et al. 2023, App. A.3; Tu et al. 2024 follow it): the
# reply's text parsed by the first-number rule, 20 tokens, no stop sequence; API models (GPT) got one chat
# message, open models raw text.
PAPER_PROTOCOL: dict[str, object] = {
    "scoring": "parsed",
    "constrain": None,
    "parse": "first-number",
    "max_tokens": 20,
    "stop": None,
}
PAPER_PROTOCOL["reasoning"] = False  # no thinking budget: a reasoning run is another protocol
# One greedy reply per item (openai_utils.py: temperature 0; T5: greedy generate): a sampled run, or the reduce of
# several replies, is another protocol (harness/scoring/repeats.py).
PAPER_PROTOCOL |= {"temperature": 0.0, "repeats": 1}


@dataclass(frozen=True)
class Published:
    """One row of paper_results.csv: numbers ×100, None where the paper gives none."""

    source: str
    dataset: str
    split: str
    model: str
    instr: str
    shots: int
    invalid_pct: float | None
    pearson: float | None
    spearman: float | None
    variant: str
    labels: str


def published_names(model_id: str) -> set[str]:
    """Published names our model id stands for (GPT-3.5 and ChatGPT-3.5 are one model); empty if none."""
    name = _BY_MODEL_ID.get(model_id.lower())
    if name is None:
        return set()
    ids = set(ALIASES[name])
    return {n for n, other in ALIASES.items() if ids & set(other)}


def _number(text: str) -> float | None:
    return float(text) if text.strip() else None


def load_published(path: Path = PAPER_RESULTS) -> list[Published]:
    """Every published row; a malformed file is one clear error."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(f))
        return [
            Published(
                r["source"],
                r["dataset"],
                r["split"],
                r["model"],
                r["instr"],
                int(r["shots"]),
                _number(r["invalid_pct"]),
                _number(r["pearson"]),
                _number(r["spearman"]),
                r.get("variant") or "sentences",
                r.get("labels") or "original",
            )
            for r in rows
        ]
    except OSError as e:
        raise HarnessError(f"cannot read published results {path}: {e.strerror}") from None
    except (KeyError, ValueError) as e:
        raise HarnessError(f"{path}: malformed published results ({e})") from None


def match(
    published: list[Published],
    model_id: str,
    dataset: str,
    split: str,
    instr: str,
    shots: int,
    variant: str = "sentences",
    labels: str = "original",
) -> Published | None:
    """The published row for exactly this setting (model via ALIASES), or None."""
    names = published_names(model_id)
    for p in published:
        if (p.model, p.dataset, p.split, p.instr, p.shots, p.variant, p.labels) in {
            (n, dataset, split, instr, shots, variant, labels) for n in names
        }:
            return p
    return None


def _chosen(identity: Mapping[str, object]) -> str:
    """How a part of the split was chosen, where it was not the first N rows (harness/datasets/items.py)."""
    if identity.get("sample") is not None:
        return f", a seeded sample (--sample {identity['sample']} --sample-seed {identity.get('sample_seed', 0)})"
    if identity.get("ids_hash") is not None:
        return ", the items of an id list (--ids)"
    return ""


def not_comparable(
    published: Published,
    n: int,
    errors: int,
    identity: dict[str, object],
    dry_run: bool = False,
    more: Sequence[str] = (),
) -> str | None:
    """Why a run must not be set against a published number (None when it may): only a run over the whole
    published split, with no failed request, under the paper's protocol and with every setting that moves the
    number as published (layout, shot stream, snapshot, answer model, truncation: paper_settings.py) is
    compared. "uncertain (...)" where nothing is known to differ but a setting the paper leaves unknown may
    (Flan-UL2's tokenizer limit): no Δ either, and the reason shown. `more`: reasons the caller
    found (a run sent to another endpoint than the provider's API, results/provenance.py, may have asked another
    model under that name; a run folder altered since it was written)."""
    if dry_run:
        return "not comparable (dry run, no answers)"
    why = list(more)
    other = OTHER_SPLITS.get((published.dataset, published.split, published.labels))
    if other is not None:  # no setting of ours can make such a row comparable: its split says it all
        return f"not comparable ({'; '.join([*why, other])})"
    full = SPLIT_SIZES.get((published.dataset, published.split, published.labels))
    if full is None:
        why.append(f"size of {published.split} unknown")
    elif n != full:
        why.append(f"n={n:,} of {full:,}" + _chosen(identity))
    if errors:
        why.append(f"{errors:,} failed request{'s' if errors != 1 else ''}")
    protocol = PAPER_PROTOCOL | {"chat": published.model in CHAT_MODELS}
    for key, paper in protocol.items():
        ours = identity.get(key, paper)
        if key == "max_tokens":  # judged with the layout, shots and snapshot (the released code's 5 too)
            continue
        if ours is not None and ours != paper and not (key == "stop" and not ours):
            why.append(f"{key}={ours} (paper: {paper}{assumed(published.source, key)})")
    p = published
    why += differences(p.source, p.model, p.instr, p.shots, p.variant, identity)
    doubt = uncertain(p.model, identity)
    if why:
        return f"not comparable ({'; '.join([*why, *doubt])})"
    return f"uncertain ({'; '.join(doubt)})" if doubt else None
