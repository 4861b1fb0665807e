"""Golden shot ids: every sampler, both datasets, k = 1..8, fixed seeds, synthetic data.

Any change to a draw (the generator's seeding, the order of the pool, the spare draw, the own-pair rule, the
reference's one stream) changes an id here and fails. A change made on purpose regenerates the file:

    python -m tests.prompting.test_fewshot_golden --write

and then changes every run's config_hash (the drawn shots are part of it: runner.config_record), so sweeps do
not reuse cells drawn the old way.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from harness.datasets import DATASETS
from harness.prompting.fewshot import REFERENCE_SEED, ReferencePicker, ShotPicker
from harness.types import Example

GOLDEN = Path(__file__).with_name("golden_shots.json")
KS = range(1, 9)


def csts_pool() -> list[Example]:
    """12 two-condition pairs (labels differ, written low first or high first), a lone row and a triple."""
    pool = []
    for i in range(12):
        lo, hi = 1.0 + i % 3, 4.0 + (i % 2)
        first, second = (lo, hi) if i % 2 else (hi, lo)
        pool.append(Example(str(len(pool)), f"alpha {i}", f"beta {i}", f"cond a{i}", first))
        pool.append(Example(str(len(pool)), f"alpha {i}", f"beta {i}", f"cond b{i}", second))
        if i == 5:
            pool.append(Example(str(len(pool)), "lone", "row", "cond", 2.0))
        if i == 8:
            pool += [Example(str(len(pool) + j), "tri", "ple", f"c{j}", 3.0) for j in range(3)]
    return pool


def stsb_pool() -> list[Example]:
    return [Example(str(i), f"gamma {i}", f"delta {i}", "", float(i % 6)) for i in range(15)]


def queries(dataset: str) -> list[Example]:
    """Six queries (ids are their row numbers); query 2 is pool pair 3 written swapped (its own pair)."""
    out = [Example(str(i), f"query {i}", f"other {i}", "c", 3.0) for i in range(6)]
    if dataset == "csts":
        out[2] = Example("2", "beta 3", "alpha 3", "c", 3.0)
    return out


def draw_all() -> dict[str, dict[str, list[str]]]:
    """sampler/dataset/seed/k -> query id -> shot ids."""
    out: dict[str, dict[str, list[str]]] = {}
    for dataset, pool in (("csts", csts_pool()), ("stsb", stsb_pool())):
        qs = queries(dataset)
        sizes = {"train": len(pool), "validation": len(qs)}
        paired = DATASETS[dataset].conditions
        pickers: dict[str, ShotPicker | ReferencePicker] = {
            f"seeded/{dataset}/0": ShotPicker(dataset, pool, 0, paired=paired),
            f"seeded/{dataset}/7": ShotPicker(dataset, pool, 7, paired=paired),
            f"reference/{dataset}/{REFERENCE_SEED}": ReferencePicker(
                dataset, pool, "validation", sizes, REFERENCE_SEED, paired=paired
            ),
            f"reference/{dataset}/3": ReferencePicker(dataset, pool, "validation", sizes, 3, paired=paired),
        }
        for name, picker in pickers.items():
            for k in KS:
                out[f"{name}/k{k}"] = {q.id: [s.id for s in picker.pick(q, k)] for q in qs}
    return out


def test_every_draw_equals_the_golden_ids() -> None:
    golden = json.loads(GOLDEN.read_text())
    drawn = draw_all()
    assert drawn.keys() == golden.keys()
    changed = [key for key in golden if drawn[key] != golden[key]]
    assert not changed, f"shot draws changed for {changed[:5]} (and {max(0, len(changed) - 5)} more)"


def test_the_golden_draws_are_not_degenerate() -> None:
    """The file itself: seeds differ, samplers differ, k shots each, no query gets its own pair."""
    golden = json.loads(GOLDEN.read_text())
    assert golden["seeded/csts/0/k4"] != golden["seeded/csts/7/k4"]
    assert golden["seeded/csts/0/k4"] != golden["reference/csts/42/k4"]
    assert golden["reference/stsb/42/k4"] != golden["reference/stsb/3/k4"]
    assert all(len(ids) == int(key.rsplit("k", 1)[1]) for key, draws in golden.items() for ids in draws.values())
    own_pair = {"6", "7"}  # pool rows of pair 3 (after pair 0..2's six rows)
    assert not any(
        own_pair & set(ids) for key, d in golden.items() if key.startswith("seeded/csts") for ids in [d["2"]]
    )


if __name__ == "__main__" and "--write" in sys.argv:
    lines = [f"{json.dumps(key)}: {json.dumps(ids)}" for key, ids in sorted(draw_all().items())]
    GOLDEN.write_text("{\n" + ",\n".join(lines) + "\n}\n")
    print(f"wrote {GOLDEN}")
