"""In-context examples pinned by id (--shot-ids FILE): the same shots, in the file's order, before every query.

This is how one rebuilds a paper's printed examples from one's own copy of the data, or holds the shots fixed while
something else varies. The ids are rows of the shot pool (the train split). C-STS shots come as sentence pairs, both
conditions together, the higher-similarity one first (Deshpande et al. 2023, §6, as the sampled shots): an id
names its row's pair, so listing either condition of a pair (or both) pins the pair. k shots take the first
ceil(k/2) pairs listed (an odd k drops the last pair's second condition, as the reference code does); STS-B takes
the first k rows.
A query never sees its own sentence pair as a shot (possible only when the evaluated split is the pool's): that
pair is passed over for the next one listed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from harness.datasets.items import read_ids
from harness.datasets.load import pair_key
from harness.prompting.fewshot import ShotPicker
from harness.types import Example, HarnessError


class PinnedPicker:
    """The shots a --shot-ids file names, for every query."""

    def __init__(self, dataset: str, pool: Sequence[Example], path: Path, *, paired: bool) -> None:
        """`paired`: the dataset's items carry a condition (shots are then both conditions of a pair)."""
        self.path = Path(path)
        ids = read_ids(self.path, "--shot-ids file")
        # The pool's units as the seeded sampler groups them: C-STS pairs with exactly two conditions.
        units = ShotPicker(dataset, pool, 0, paired=paired).units
        unit_of = {e.id: unit for unit in units for e in unit}
        rows = {e.id for e in pool}
        chosen: list[tuple[Example, ...]] = []
        for item in ids:
            if item not in unit_of:
                why = (
                    "is not a row of the shot pool (the train split)"
                    if item not in rows
                    else ("is a sentence pair without exactly two conditions, which the paper's shots never are")
                )
                raise HarnessError(f"--shot-ids {path}: id {item} {why}")
            if unit_of[item] not in chosen:  # a pair's other condition listed too: the same pair, once
                chosen.append(unit_of[item])
        self.units = chosen

    def pick(self, query: Example, k: int) -> tuple[Example, ...]:
        """The first k pinned shots, the query's own pair passed over."""
        if k <= 0:
            return ()
        per_unit = len(self.units[0])
        need = -(-k // per_unit)
        own = pair_key(query)
        usable = [u for u in self.units if pair_key(u[0]) != own][:need]
        if len(usable) < need:
            what = "sentence pairs" if per_unit == 2 else "rows"
            raise HarnessError(f"--shot-ids {self.path} names {len(usable)} usable {what}, too few for k={k}")
        return tuple(e for unit in usable for e in unit)[:k]
