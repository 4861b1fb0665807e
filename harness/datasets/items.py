"""Which items a run scores: every one, the first N (--limit), a seeded random N (--sample with --sample-seed) or
the ids a file lists (--ids). Pure selection over a loaded split's examples, before --shard cuts its part, so that
every part, model and order of the rows sees the same items.

A seeded sample ranks every item by a hash of (seed, its id) and keeps the N lowest, in the split's order: the items
depend on the seed, N and the ids alone (not on the rows' order in the file, the model, --shard or the machine), and
a smaller sample with the same seed is part of a larger one (a 100-item pilot is inside the 500 that follow it).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from harness.inputs import read_bytes
from harness.types import Example, HarnessError

MAX_IDS_BYTES = 16 << 20  # an id list of a million ids is ~7 MB: anything past this is not an id list


def sample_rank(seed: int, item_id: str) -> bytes:
    """The item's place in the seed's order (stable across processes: no use of Python's salted hash())."""
    return hashlib.sha256(f"{seed}\x1fsample\x1f{item_id}".encode()).digest()


def read_ids(path: Path, what: str = "--ids file") -> tuple[str, ...]:
    """One id per line (a split's row number, as samples.jsonl names it); blank lines and `#` comments skipped.
    Every problem is one HarnessError naming the line."""
    data = read_bytes(Path(path), what)
    if len(data) > MAX_IDS_BYTES:
        raise HarnessError(f"{what} {path} is {len(data):,} bytes, more than an id list's {MAX_IDS_BYTES:,}")
    try:
        lines = data.decode("utf-8-sig").splitlines()
    except UnicodeDecodeError as e:
        raise HarnessError(f"{what} {path} is not UTF-8 text (byte {e.start})") from None
    ids: dict[str, int] = {}
    for n, line in enumerate(lines, start=1):
        item = line.split("#", 1)[0].strip()
        if not item:
            continue
        if any(c.isspace() for c in item):
            raise HarnessError(f"{what} {path} line {n}: one id per line, got {item[:40]!r}")
        if item in ids:
            raise HarnessError(f"{what} {path} line {n}: id {item} is listed twice (first on line {ids[item]})")
        ids[item] = n
    if not ids:
        raise HarnessError(f"{what} {path} lists no id")
    return tuple(ids)


def ids_hash(ids: tuple[str, ...] | list[str]) -> str:
    """A digest of the chosen ids, in order: what config.json records of an id list (the file may change)."""
    return hashlib.sha256("\n".join(ids).encode()).hexdigest()[:16]


def select(
    examples: tuple[Example, ...],
    limit: int | None = None,
    sample: int | None = None,
    sample_seed: int = 0,
    ids: Path | None = None,
    where: str = "the split",
) -> tuple[Example, ...]:
    """The items a run scores, in the split's order (an id list's too, so that its order in the file changes
    nothing). At most one of limit, sample and ids is set (harness/config/validate.py)."""
    if ids is not None:
        wanted = read_ids(ids)
        by_id = {e.id: e for e in examples}
        for n, item in enumerate(wanted):
            if item not in by_id:
                raise HarnessError(
                    f"--ids {ids}: id {item} (its {_ordinal(n + 1)} id) is not in {where} "
                    f"(ids are 0-based row numbers, 0-{len(examples) - 1})"
                )
        listed = set(wanted)
        return tuple(e for e in examples if e.id in listed)
    if sample is not None:
        if sample >= len(examples):
            return examples  # every item: the whole split, in its order
        chosen = set(sorted(range(len(examples)), key=lambda i: sample_rank(sample_seed, examples[i].id))[:sample])
        return tuple(e for i, e in enumerate(examples) if i in chosen)
    return examples[:limit] if limit is not None else examples


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"
