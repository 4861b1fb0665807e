"""Shots: whole C-STS sentence pairs, higher similarity first, seeded per query, never the query's own pair."""

from __future__ import annotations

import pytest

from harness.config.settings import RunConfig
from harness.datasets.choose import load_dataset
from harness.datasets.load import pair_key
from harness.prompting.fewshot import ShotPicker, make_picker
from harness.types import Dataset, Example, HarnessError
from tests.conftest import SHARED_ARCHIVE, SHARED_PASSWORD, requires_shared


def _pool(n_pairs: int) -> list[Example]:
    pool = []
    for i in range(n_pairs):
        pool.append(Example(str(2 * i), f"s1 {i}", f"s2 {i}", "c low", 1.0 + (i % 2)))
        pool.append(Example(str(2 * i + 1), f"s1 {i}", f"s2 {i}", "c high", 5.0))
    return pool


def test_csts_shots_are_pairs_with_higher_label_first() -> None:
    shots = ShotPicker("csts", _pool(20), seed=0, paired=True).pick(Example("q", "a", "b", "c", 3.0), 4)
    assert len(shots) == 4
    for first, second in (shots[0:2], shots[2:4]):
        assert pair_key(first) == pair_key(second)
        assert first.label >= second.label  # type: ignore[operator]
    assert pair_key(shots[0]) != pair_key(shots[2])


def test_odd_k_truncates_the_last_pair() -> None:
    picker = ShotPicker("csts", _pool(20), seed=0, paired=True)
    q = Example("q", "a", "b", "c", 3.0)
    assert picker.pick(q, 3) == picker.pick(q, 4)[:3]


def test_only_pairs_with_exactly_two_conditions_qualify() -> None:
    pool = [
        *_pool(3),
        Example("x1", "lone", "one", "c", 2.0),
        *[Example(f"t{i}", "tri", "ple", "c", 2.0) for i in range(3)],
    ]
    units = ShotPicker("csts", pool, seed=0, paired=True).units
    assert len(units) == 3 and all(len(u) == 2 for u in units)


def test_query_never_gets_its_own_sentence_pair() -> None:
    pool = _pool(3)
    query = Example("q", "s2 1", "s1 1", "other", 2.0)  # pair 1, sentences swapped
    draws = set()
    for seed in range(30):
        shots = ShotPicker("csts", pool, seed=seed, paired=True).pick(query, 4)  # a fresh picker: a fresh draw per seed
        assert all(pair_key(s) != pair_key(query) for s in shots)
        draws.add(tuple(s.id for s in shots))
    assert draws == {("1", "0", "5", "4"), ("5", "4", "1", "0")}  # both orders of the two other pairs


def test_a_changed_seed_draws_afresh() -> None:
    """The memo of drawn shots is keyed by the seed too: a picker whose seed changes never replays the old draw."""
    pool, query = _pool(40), Example("q", "a", "b", "c", 3.0)
    picker = ShotPicker("csts", pool, seed=0, paired=True)
    first = picker.pick(query, 4)
    picker.seed = 7
    assert picker.pick(query, 4) == ShotPicker("csts", pool, seed=7, paired=True).pick(query, 4) != first
    picker.seed = 0
    assert picker.pick(query, 4) == first


@pytest.mark.parametrize(
    ("sampler", "seed", "shot_seed", "expected"),
    [("seeded", 3, None, 3), ("seeded", 3, 11, 11), ("reference", 3, None, 42), ("reference", 3, 11, 11)],
)
def test_shot_seed_beats_seed_which_beats_the_samplers_default(
    sampler: str, seed: int, shot_seed: int | None, expected: int
) -> None:
    pool = _pool(10)
    ds = Dataset("csts", "train", tuple(pool), tuple(pool), (1.0, 5.0), {}, conditions=True)
    config = RunConfig(model="m", split="train", seed=seed, shot_seed=shot_seed, shot_sampler=sampler)
    picker = make_picker(config, ds)
    assert picker.seed == expected
    if sampler == "seeded":
        assert picker.pick(pool[0], 4) == ShotPicker("csts", pool, expected, paired=True).pick(pool[0], 4)


def test_same_seed_and_query_give_same_shots_in_any_order() -> None:
    pool = _pool(50)
    queries = [Example(str(i), f"a{i}", f"b{i}", "c", 1.0) for i in range(20)]
    forward = [ShotPicker("csts", pool, seed=7, paired=True).pick(q, 4) for q in queries]
    picker = ShotPicker("csts", pool, seed=7, paired=True)
    backward = [picker.pick(q, 4) for q in reversed(queries)][::-1]
    assert forward == backward
    assert forward != [ShotPicker("csts", pool, seed=8, paired=True).pick(q, 4) for q in queries]


def test_stsb_takes_k_single_rows() -> None:
    pool = [Example(str(i), f"a{i}", f"b{i}", "", float(i % 6)) for i in range(30)]
    shots = ShotPicker("stsb", pool, seed=0, paired=False).pick(Example("q", "x", "y", "", 2.0), 5)
    assert len(shots) == 5 and len({s.id for s in shots}) == 5


def test_pool_too_small_is_a_clear_error() -> None:
    with pytest.raises(HarnessError, match="too few for k=6"):
        ShotPicker("csts", _pool(2), seed=0, paired=True).pick(Example("q", "a", "b", "c", 1.0), 6)


@requires_shared
def test_real_csts_shots_are_whole_pairs() -> None:
    ds = load_dataset("csts", "validation", archive=SHARED_ARCHIVE, password_file=SHARED_PASSWORD)
    picker = ShotPicker("csts", ds.pool, seed=0, paired=True)
    assert len(picker.units) == 5671
    by_id = {e.id: e for e in ds.pool}
    for q in ds.examples[:500]:
        shots = picker.pick(q, 4)
        assert len(shots) == 4
        for a, b in (shots[:2], shots[2:]):
            assert pair_key(a) == pair_key(b) and a.condition != b.condition
            assert a.label >= b.label  # type: ignore[operator]
            assert int(b.id) == int(a.id) + 1 or a.label == b.label  # train pairs are adjacent rows
            assert by_id[a.id] is a
        assert pair_key(shots[0]) != pair_key(q) and pair_key(shots[2]) != pair_key(q)


def test_reference_sampler_needs_enough_pairs_or_rows_for_k() -> None:
    """C-STS: (k+1)//2 pairs of the pool; STS-B: k rows other than the query's own row."""
    from harness.prompting.fewshot import ReferencePicker

    pairs = ReferencePicker("csts", _pool(3), "train", {"train": 6}, seed=42, paired=True)
    assert len(pairs.table(6)[0]) == 6 and len(pairs.table(5)[0]) == 5
    with pytest.raises(HarnessError, match="pool has 3 usable pairs, too few for k=7"):
        pairs.table(7)
    rows = [Example(str(i), f"a{i}", f"b{i}", "", 1.0) for i in range(5)]
    stsb = ReferencePicker("stsb", rows, "train", {"train": 5}, seed=42, paired=False)
    assert all(len(shots) == 4 and str(i) not in {s.id for s in shots} for i, shots in enumerate(stsb.table(4)))
    with pytest.raises(HarnessError, match="pool has 5 rows, too few for k=5"):
        stsb.table(5)
