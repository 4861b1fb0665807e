"""Pick in-context examples per query.

The default (`reference`) replays the reference code's one global stream (Deshpande et al. 2023's
run_sts_fewshot.py), so a run's prompts are the ones the paper's code produced; it is drawn once over the whole
split as filed, so a query's shots do not depend on the model, the order, --limit, --shard or concurrency either.
`seeded` draws each query's shots from its own generator, seeded by (seed, query id): independent of the split's
other rows, for data the reference code never walked and for spreads over shot draws (--shot-seed).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence

from harness.config.settings import RunConfig
from harness.datasets.choose import load_dataset
from harness.datasets.description import LoadCache
from harness.datasets.load import pair_key
from harness.types import Dataset, Example, HarnessError


def query_rng(seed: int, purpose: str, query_id: str) -> random.Random:
    """A generator private to one query, stable across processes (no use of Python's salted hash())."""
    digest = hashlib.sha256(f"{seed}\x1f{purpose}\x1f{query_id}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


class ShotPicker:
    """Chooses k shots for a query from a pool, the same ones for the same (seed, query id)."""

    def __init__(self, dataset: str, pool: Sequence[Example], seed: int, *, paired: bool) -> None:
        """`paired`: the dataset's items carry a condition (its description's `conditions`)."""
        self.dataset = dataset
        self.seed = seed
        if paired:
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
        # Shots already drawn: a query's shots depend only on (seed, its id, its sentence pair, k), and a sweep's
        # cells share one picker per dataset, so cells with the same k (other models, instructions) reuse them.
        # The seed is in the key too: a picker whose seed is changed must draw afresh, never replay the old draw.
        self._picked: dict[tuple[int, str, tuple[str, str], int], tuple[Example, ...]] = {}

    def pick(self, query: Example, k: int) -> tuple[Example, ...]:
        """k shots; an odd k drops the last pair's second condition, as the reference code does."""
        if k <= 0:
            return ()
        own = pair_key(query)
        key = (self.seed, query.id, own, k)
        if key not in self._picked:
            self._picked[key] = self._draw(query.id, own, k)
        return self._picked[key]

    def _draw(self, query_id: str, own: tuple[str, str], k: int) -> tuple[Example, ...]:
        per_unit = len(self.units[0]) if self.units else 1
        n_units = -(-k // per_unit)
        rng = query_rng(self.seed, f"shots/{self.dataset}", query_id)
        # One spare draw covers the case where a drawn unit is the query's own sentence pair.
        drawn = rng.sample(range(len(self.units)), min(n_units + 1, len(self.units)))
        chosen = [self.units[i] for i in drawn if self._unit_keys[i] != own][:n_units]
        if len(chosen) < n_units:
            raise HarnessError(f"few-shot pool has {len(self.units)} usable units, too few for k={k}")
        shots = [e for unit in chosen for e in unit]
        return tuple(shots[:k])


# --- the reference code's own shot choice (--shot-sampler reference) ------------------------------------------

SAMPLERS = ("seeded", "reference")
REFERENCE_SEED = 42  # run_sts_fewshot.py's --seed default
REFERENCE_SPLIT_ORDER = ("train", "validation", "test")  # the order make_dataset() consumes the stream in


class _AllBut(Sequence[int]):
    """range(n) without ix, in ascending order: what `list(set(range(n)) - {ix})` is in CPython (small ints hash
    to themselves, so the set iterates in order), without building an n-element list per query."""

    def __init__(self, n: int, ix: int) -> None:
        self.n, self.ix = n, ix
        self.size = n - 1 if 0 <= ix < n else n

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, i):  # type: ignore[no-untyped-def, override]
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self.size))]
        if not -self.size <= i < self.size:
            raise IndexError(i)
        i %= self.size
        return i + 1 if self.size < self.n and i >= self.ix else i


class ReferencePicker:
    """Shots exactly as princeton-nlp/c-sts `utils/fewshot/generate_in_context_dataset.py` chooses them.

    `make_dataset()` seeds ONE global `random` stream (`random.seed(seed)`; `run_sts_fewshot.py` defaults
    to 42) and walks the train split, then the validation split, then the test split, drawing for every row:
    C-STS `random.sample(range(len(pairs)), (k+1)//2)` sentence pairs (pairs in order of first appearance in
    train, each higher label first, only pairs with exactly two conditions; no check against the query's own
    pair), then the first k of their rows; STS-B `random.sample(list(set(range(len(train))) - {ix}), k)` train
    rows (ix: the query's row number in its own split). A query's shots therefore depend on every row before
    it, in every split before its own, and on k: `split_sizes` gives those split lengths (the rows as filed,
    before any --labels or --subset filtering; queries are looked up by row number).
    """

    def __init__(
        self, dataset: str, pool: Sequence[Example], split: str, split_sizes: dict[str, int], seed: int, *, paired: bool
    ) -> None:
        if split not in REFERENCE_SPLIT_ORDER:
            raise HarnessError(f"--shot-sampler reference: unknown split {split!r}")
        self.dataset = dataset
        self.paired = paired
        self.pool = list(pool)
        self.split = split
        self.split_sizes = split_sizes
        self.seed = seed
        # The same pairs, in the same order, as the reference's get_idx_pairs (ShotPicker builds them alike).
        self.units = ShotPicker(dataset, pool, seed, paired=True).units if paired else []
        self._table: dict[int, list[tuple[Example, ...]]] = {}

    def table(self, k: int) -> list[tuple[Example, ...]]:
        """Shots of every row of the evaluated split, for this k."""
        if k not in self._table:
            rng = random.Random(self.seed)  # the same stream as random.seed(seed) on the global generator
            order = REFERENCE_SPLIT_ORDER[: REFERENCE_SPLIT_ORDER.index(self.split) + 1]
            for name in order:
                rows = [self._draw(rng, ix, k) for ix in range(self.split_sizes[name])]
            self._table[k] = rows
        return self._table[k]

    def _draw(self, rng: random.Random, ix: int, k: int) -> tuple[Example, ...]:
        if self.paired:
            if (k + 1) // 2 > len(self.units):
                raise HarnessError(f"few-shot pool has {len(self.units)} usable pairs, too few for k={k}")
            drawn = rng.sample(range(len(self.units)), k=(k + 1) // 2)
            return tuple(e for i in drawn for e in self.units[i])[:k]
        if k > len(self.pool) - 1:
            raise HarnessError(f"few-shot pool has {len(self.pool)} rows, too few for k={k}")
        return tuple(self.pool[i] for i in rng.sample(_AllBut(len(self.pool), ix), k=k))

    def pick(self, query: Example, k: int) -> tuple[Example, ...]:
        if k <= 0:
            return ()
        rows = self.table(k)
        ix = int(query.id)
        if not 0 <= ix < len(rows):
            raise HarnessError(f"--shot-sampler reference: query row {query.id} is outside its split")
        return rows[ix]


def make_picker(config: RunConfig, dataset: Dataset, cache: LoadCache | None = None) -> ShotPicker | ReferencePicker:
    """The run's shot sampler. `dataset` is the split as filed (before --labels/--subset filtering); `cache`:
    the sweep's loaded splits (the reference sampler of the test split also reads validation)."""
    if config.shot_sampler not in SAMPLERS:
        raise HarnessError(f"unknown --shot-sampler {config.shot_sampler!r}; choose from {', '.join(SAMPLERS)}")
    if config.shot_sampler == "seeded":
        seeded = config.seed if config.shot_seed is None else config.shot_seed
        return ShotPicker(dataset.name, dataset.pool, seeded, paired=dataset.conditions)
    sizes = {"train": len(dataset.pool), dataset.split: len(dataset.examples)}
    if dataset.split == "test":  # the reference walks validation before test
        sizes["validation"] = len(
            load_dataset(
                config.dataset, "validation", config.data_dir, config.archive, config.password_file, cache
            ).examples
        )
    seed = REFERENCE_SEED if config.shot_seed is None else config.shot_seed
    return ReferencePicker(dataset.name, dataset.pool, dataset.split, sizes, seed, paired=dataset.conditions)
