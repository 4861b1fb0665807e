"""Pick in-context examples per query: seeded by (seed, query id), so independent of model, order, concurrency."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence

from harness.data import pair_key
from harness.types import Example, HarnessError


def query_rng(seed: int, purpose: str, query_id: str) -> random.Random:
    """A generator private to one query, stable across processes (no use of Python's salted hash())."""
    digest = hashlib.sha256(f"{seed}\x1f{purpose}\x1f{query_id}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


class ShotPicker:
    """Chooses k shots for a query from a pool, the same ones for the same (seed, query id)."""

    def __init__(self, dataset: str, pool: Sequence[Example], seed: int) -> None:
        self.dataset = dataset
        self.seed = seed
        if dataset == "csts":
            # Deshpande et al. 2023, §6: shots are both conditions of one sentence pair, the
            # higher-similarity one first; only pairs with exactly two conditions qualify. Pairs are
            # grouped as written (sentence1, sentence2): the release has a few pairs that also occur
            # swapped, as separate instances with their own two conditions.
            groups: dict[tuple[str, str], list[Example]] = {}
            for e in pool:
                groups.setdefault((e.sentence1, e.sentence2), []).append(e)
            units = [
                tuple(sorted(group, key=lambda e: -(e.label or 0.0))) for group in groups.values() if len(group) == 2
            ]
        else:
            units = [(e,) for e in pool]
        self.units: list[tuple[Example, ...]] = units
        self._unit_keys = [pair_key(u[0]) for u in units]

    def pick(self, query: Example, k: int) -> tuple[Example, ...]:
        """k shots; an odd k drops the last pair's second condition, as the reference code does."""
        if k <= 0:
            return ()
        per_unit = len(self.units[0]) if self.units else 1
        n_units = -(-k // per_unit)
        own = pair_key(query)
        rng = query_rng(self.seed, f"shots/{self.dataset}", query.id)
        # One spare draw covers the case where a drawn unit is the query's own sentence pair.
        drawn = rng.sample(range(len(self.units)), min(n_units + 1, len(self.units)))
        chosen = [self.units[i] for i in drawn if self._unit_keys[i] != own][:n_units]
        if len(chosen) < n_units:
            raise HarnessError(f"few-shot pool has {len(self.units)} usable units, too few for k={k}")
        shots = [e for unit in chosen for e in unit]
        return tuple(shots[:k])
