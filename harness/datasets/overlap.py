"""What the few-shot pool shares with the evaluated split: shots that repeat test text inflate scores."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass

from harness.datasets.load import pair_key
from harness.types import Example


@dataclass(frozen=True)
class Overlap:
    """Distinct items of one kind on the evaluated side, and how many of them the pool also has."""

    kind: str
    shared: int
    evaluated: int

    @property
    def pct(self) -> float | None:
        return 100.0 * self.shared / self.evaluated if self.evaluated else None


def _sentences(e: Example) -> Iterable[Hashable]:
    return (e.sentence1, e.sentence2)


def _conditions(e: Example) -> Iterable[Hashable]:
    return (e.condition,) if e.condition else ()


def _sentence_conditions(e: Example) -> Iterable[Hashable]:
    return ((e.sentence1, e.condition), (e.sentence2, e.condition)) if e.condition else ()


def _pairs(e: Example) -> Iterable[Hashable]:
    return (pair_key(e),)


def _instances(e: Example) -> Iterable[Hashable]:
    return ((pair_key(e), e.condition),)


# Zhang et al. 2025, App. C: the five kinds, compared as exact strings; pairs and instances ignore sentence order.
KINDS: dict[str, Callable[[Example], Iterable[Hashable]]] = {
    "sentences": _sentences,
    "conditions": _conditions,
    "sentence-condition pairs": _sentence_conditions,
    "sentence pairs (either order)": _pairs,
    "instances (pair + condition)": _instances,
}


def overlap(pool: Sequence[Example], evaluated: Sequence[Example]) -> list[Overlap]:
    """Counts of distinct evaluated items of each kind that also occur in the pool, and % of the evaluated side."""
    out = []
    for kind, items in KINDS.items():
        seen = {x for e in pool for x in items(e)}
        mine = {x for e in evaluated for x in items(e)}
        out.append(Overlap(kind, len(mine & seen), len(mine)))
    return out


def format_overlap(rows: Sequence[Overlap], pool_name: str, eval_name: str) -> str:
    """A Markdown table of the overlap counts."""
    lines = [
        f"| kind | shared with {pool_name} | distinct in {eval_name} | % of {eval_name} |",
        "|---|---:|---:|---:|",
    ]
    lines += [
        f"| {r.kind} | {r.shared:,} | {r.evaluated:,} | {'–' if r.pct is None else f'{r.pct:.3f}'} |" for r in rows
    ]
    return "\n".join(lines) + "\n"
