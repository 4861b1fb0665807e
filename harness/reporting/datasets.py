"""Dataset report: split sizes, label distributions, text lengths, and agreement between label sets."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from typing import Any

from harness.datasets.labels import load_reannotated
from harness.scoring.metrics import pearson, spearman
from harness.types import Example

# Published facts to show beside ours (Tu et al. 2024, §3 and §4.1).
# §4.3.1 states a "55% error rate in the C-STS validation set": the share of rows whose re-annotated label differs
# from the original (ours, on the bundled labels, is beside it: they need not agree).
PUBLISHED_AGREEMENT = {"n": 2620, "left_out": 214, "spearman": 49.22, "source": "Tu et al. 2024, §3/§4.1"}
PUBLISHED_AGREEMENT["changed_pct"] = 55.0


def label_distribution(examples: Sequence[Example]) -> dict[str, int]:
    """Counts per label; continuous scores (STS-B) are binned [0,1), [1,2), …, [4,5]."""
    labels = [e.label for e in examples if e.label is not None]
    continuous = any(not x.is_integer() for x in labels)
    top = max(labels, default=0.0)
    counts: Counter[str] = Counter()
    for x in labels:
        if continuous:
            lo = min(int(x), int(top) - 1) if top.is_integer() else int(x)  # the top score joins the last bin
            counts[f"{lo}–{lo + 1}"] += 1
        else:
            counts[f"{x:g}"] += 1
    if len(labels) < len(examples):
        counts["hidden"] = len(examples) - len(labels)
    return dict(sorted(counts.items()))


def length_stats(texts: Sequence[str]) -> dict[str, float]:
    """Length in words: mean, median, max (and mean characters)."""
    words = [len(t.split()) for t in texts]
    if not words:
        return {}
    return {
        "mean_words": statistics.fmean(words),
        "median_words": statistics.median(words),
        "max_words": max(words),
        "mean_chars": statistics.fmean(len(t) for t in texts),
    }


def split_summary(examples: Sequence[Example], with_condition: bool) -> dict[str, Any]:
    """Size, label distribution and lengths of one split."""
    summary: dict[str, Any] = {
        "n": len(examples),
        "labels": label_distribution(examples),
        "sentence_length": length_stats([e.sentence1 for e in examples] + [e.sentence2 for e in examples]),
    }
    if with_condition:
        summary["condition_length"] = length_stats([e.condition for e in examples])
        summary["empty_conditions"] = sum(not e.condition.strip() for e in examples)
    return summary


def agreement(a: dict[str, float | None], b: dict[str, float | None]) -> dict[str, Any]:
    """Agreement of two label sets on the ids both label (None = left out)."""
    shared = [i for i in a if i in b and a[i] is not None and b[i] is not None]
    x = [a[i] for i in shared]
    y = [b[i] for i in shared]
    return {
        "n": len(shared),
        "spearman": spearman(x, y),  # type: ignore[arg-type]
        "pearson": pearson(x, y),  # type: ignore[arg-type]
        "exact_match_pct": 100.0 * sum(p == q for p, q in zip(x, y, strict=True)) / len(shared) if shared else None,
        "left_out": dict(Counter(_why_left_out(i, a, b) for i in a.keys() | b.keys() if i not in shared)),
    }


def _why_left_out(i: str, a: dict[str, float | None], b: dict[str, float | None]) -> str:
    if i not in a:
        return "absent from first set"
    if i not in b:
        return "absent from second set"
    return "unlabelled in first set" if a[i] is None else "unlabelled in second set"


def csts_label_agreement(validation: Sequence[Example]) -> dict[str, Any]:
    """Original vs Tu et al. re-annotated labels on C-STS validation, with the published figures beside."""
    original = {e.id: e.label for e in validation}
    result = agreement(original, load_reannotated())
    result["published"] = PUBLISHED_AGREEMENT
    return result


def to_markdown(report: dict[str, Any]) -> str:
    """Render the report as Markdown tables."""
    lines: list[str] = []
    for dataset, splits in report["datasets"].items():
        lines += [f"## {dataset}", "", "| split | n | labels | sentence words (mean/median/max) | condition words |"]
        lines.append("| --- | --- | --- | --- | --- |")
        for split, s in splits.items():
            sl = s["sentence_length"]
            cl = s.get("condition_length")
            cond = f"{cl['mean_words']:.1f}/{cl['median_words']:g}/{cl['max_words']}" if cl else "–"
            labels = ", ".join(f"{k}: {v}" for k, v in s["labels"].items())
            lines.append(
                f"| {split} | {s['n']} | {labels} | "
                f"{sl['mean_words']:.1f}/{sl['median_words']:g}/{sl['max_words']} | {cond} |"
            )
        lines.append("")
    if "agreement" in report:
        a = report["agreement"]
        p = a["published"]
        lines += [
            "## C-STS validation: original vs re-annotated labels (Tu et al. 2024)",
            "",
            "| | n | Spearman | Pearson | exact match % | labels changed % | left out |",
            "| --- | --- | --- | --- | --- | --- | --- |",
            f"| ours | {a['n']} | {a['spearman']:.2f} | {a['pearson']:.2f} | {a['exact_match_pct']:.1f} | "
            f"{100 - a['exact_match_pct']:.1f} | "
            + "; ".join(f"{k}: {v}" for k, v in a["left_out"].items() if v)
            + " |",
            f"| published ({p['source']}) | {p['n']} | {p['spearman']:.2f} | – | – | {p['changed_pct']:g} (§4.3.1) | "
            f"{p['left_out']} invalid (-1) |",
            "",
        ]
    return "\n".join(lines)
