"""results/shards.py on Run values made here (fast; test_shards.py runs the parts through the command line): which
parts merge, in which order their samples go back, and the one line that refuses parts of different runs."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from harness.results.manifest import ALTERED, UNVERIFIED, Integrity
from harness.results.read import Run
from harness.results.shards import MERGE_MARKS, PART_KEYS, differing, merge_shards
from harness.types import HarnessError, Scored

COMMIT = {"commit": "c" * 40, "dirty": False}
AS_WRITTEN = Integrity()


def part(
    k: int,
    n: int,
    total: int,
    whole: str = "w",
    settings: dict[str, Any] | None = None,
    git: dict[str, Any] | None = None,
    integrity: Integrity = AS_WRITTEN,
    samples: int | None = None,
    dry_run: bool = False,
    **config: Any,
) -> Run:
    """Part k of n of a run of `total` queries q0..q{total-1}: positions k-1, k-1+n, ..."""
    ids = [f"q{i}" for i in range(k - 1, total, n)][:samples]
    scored = tuple(
        Scored(
            id=i,
            prompt=f"prompt {i}",
            shot_ids=(),
            output=f"{len(i)}",
            parsed=float(len(i)),
            valid=True,
            prediction=float(len(i)),
            label=None,
        )
        for i in ids
    )
    record = {
        "model": "m",
        "config_hash": f"{whole}-{k}",
        "shard": {"part": k, "of": n, "whole_hash": whole, "whole_queries": total},
        "n_queries": len(ids) if samples is None else len(range(k - 1, total, n)),
        "settings": {"seed": 0, "shard": [k, n]} | (settings or {}),
        "git": COMMIT if git is None else git,
        "created": f"t{k}",
        "packages": {"x": str(k)},
    } | config
    metrics = {"dry_run": True} if dry_run else {"spearman": 0.1 * k}
    extras = tuple({"reason": "number", "id": i} for i in ids)
    return Run(Path(f"/r/{whole}-part{k}of{n}"), record, scored, metrics, extras, integrity)


def test_parts_go_back_in_the_whole_runs_order_whatever_order_they_come_in() -> None:
    parts = [part(2, 3, 8), part(3, 3, 8), part(1, 3, 8)]
    (merged,), (note,) = merge_shards(parts)
    assert [s.id for s in merged.samples] == [f"q{i}" for i in range(8)]
    assert [e["id"] for e in merged.extras] == [f"q{i}" for i in range(8)]
    assert merged.run_dir == Path("/r/w-part1of3+2-parts")
    assert merged.config["config_hash"] == "w" and merged.config["n_queries"] == 8
    assert "shard" not in merged.config and merged.config["settings"]["shard"] is None
    assert merged.config["settings"]["seed"] == 0 and merged.config["model"] == "m"
    assert merged.config["created"] == "t1" and merged.config["packages"] == {"x": "1"}  # the first part's
    assert merged.stored_metrics == {}  # each part's Spearman is its own, never the whole's
    assert merged.integrity.status == "verified"
    assert note == (
        "`w-part1of3+2-parts` is 3 --shard parts merged (each checked against its manifest), computed with commit "
        "cccccccccccc: `/r/w-part2of3`, `/r/w-part3of3`, `/r/w-part1of3`"
    )


def test_runs_that_are_no_parts_stay_where_they_were() -> None:
    plain = Run(Path("/r/plain"), {"model": "m"}, (), {}, ())
    other = Run(Path("/r/other"), {"model": "m", "shard": None}, (), {}, ())
    out, notes = merge_shards([plain, part(2, 2, 4), other, part(1, 2, 4)])
    assert [r.run_dir.name for r in out] == ["plain", "w-part1of2+1-parts", "other"]
    assert len(notes) == 1
    assert merge_shards([plain]) == ([plain], [])


def test_two_sharded_runs_merge_each_into_its_own() -> None:
    parts = [part(1, 2, 4, "a"), part(1, 2, 6, "b"), part(2, 2, 4, "a"), part(2, 2, 6, "b")]
    out, notes = merge_shards(parts)
    assert [(r.config["config_hash"], len(r.samples)) for r in out] == [("a", 4), ("b", 6)]
    assert len(notes) == 2


def test_dry_run_parts_stay_a_dry_run() -> None:
    (merged,), _ = merge_shards([part(1, 2, 4, dry_run=True), part(2, 2, 4, dry_run=True)])
    assert merged.stored_metrics == {"dry_run": True}
    (mixed,), _ = merge_shards([part(1, 2, 4, dry_run=True), part(2, 2, 4)])
    assert mixed.stored_metrics == {}


@pytest.mark.parametrize(
    ("parts", "message"),
    [
        ([part(1, 3, 8), part(3, 3, 8)], "run w: --shard part(s) 2/3 missing (from /r/w-part1of3)"),
        ([part(2, 3, 8)], "run w: --shard part(s) 1/3, 3/3 missing (from /r/w-part2of3)"),
        ([part(1, 2, 4), part(1, 2, 4)], "--shard part 1/2 of run w twice: /r/w-part1of2, /r/w-part1of2"),
        (
            [part(1, 2, 4), part(2, 2, 4, integrity=Integrity(ALTERED, "a line edited"))],
            "--shard part /r/w-part2of2 is altered (a line edited): not merged",
        ),
        (
            [part(1, 2, 4), part(2, 2, 4, integrity=Integrity(UNVERIFIED, "no manifest"))],
            "--shard part /r/w-part2of2 is unverified (no manifest): not merged",
        ),
        ([part(1, 2, 4), part(2, 2, 4, samples=1)], "--shard part /r/w-part2of2 holds 1 of its 2"),
        ([part(1, 2, 4), part(2, 2, 5)], "--shard part /r/w-part2of2 is not a part of the same run as /r/w-part1of2"),
        ([part(1, 2, 4), part(2, 3, 4)], "--shard part /r/w-part2of3 is not a part of the same run as /r/w-part1of2"),
        (
            [part(1, 2, 4), part(2, 2, 4, dataset="stsb")],
            "--shard part /r/w-part2of2 is not a part of the same run as /r/w-part1of2",
        ),
        (
            [part(1, 2, 4), part(2, 2, 4, settings={"think_tags": "none"})],
            "--shard part /r/w-part2of2 is not a part of the same run as /r/w-part1of2: they differ in --think-tags "
            "('auto', 'none'); not merged",
        ),
        (
            [part(1, 2, 4), part(2, 2, 4, git={"commit": "d" * 40, "dirty": False})],
            f"--shard part /r/w-part2of2 is not a part of the same run as /r/w-part1of2: they differ in the git "
            f"commit ({'c' * 40}, {'d' * 40}); not merged",
        ),
    ],
)
def test_parts_that_cannot_make_the_whole_run_are_refused_in_one_line(parts: list[Run], message: str) -> None:
    with pytest.raises(HarnessError) as e:
        merge_shards(parts)
    assert str(e.value) == message


def test_parts_of_another_hash_that_would_complete_a_run_name_the_setting() -> None:
    """Parts run with another --think-tags have another whole hash; they are named as such, not as missing."""
    a, b = part(1, 2, 4, "a"), part(2, 2, 4, "b", settings={"think_tags": "none", "api": {"max_reply_mb": 2.0}})
    with pytest.raises(HarnessError) as e:
        merge_shards([a, b])
    assert str(e.value) == (
        "--shard parts /r/a-part1of2 and /r/b-part2of2 are not parts of one run: they differ in --think-tags "
        "('auto', 'none'); --max-reply-mb (32.0, 2.0); not merged (run every part with the same settings and code)"
    )
    # another cut of the queries, or a part the group already has: told as missing, as before
    for other in (part(2, 3, 4, "b", settings={"think_tags": "none"}), part(1, 2, 4, "b", think_tags="x")):
        with pytest.raises(HarnessError, match="missing"):
            merge_shards([a, other])
    with pytest.raises(HarnessError, match="missing"):  # another run's cut: nothing to name
        merge_shards([a, part(2, 2, 5, "b")])
    with pytest.raises(HarnessError, match="missing"):  # the same settings and code: nothing differs to name
        merge_shards([a, part(2, 2, 4, "b")])


def test_differing_names_the_marked_settings_and_the_commit_only() -> None:
    a = part(1, 2, 4)
    same = part(2, 2, 4, settings={"api": {"timeout": 5.0, "concurrency": 3}}, created="x", packages={})
    assert differing(a, same) == []  # OPERATION settings, times and versions may differ between parts
    b = part(2, 2, 4, settings={"max_tokens": 5, "limit": 9}, git={"commit": None, "dirty": None})
    assert differing(a, b) == ["--max-tokens (20, 5)", f"the git commit ({'c' * 40}, None)"]  # limit: ITEMS
    assert differing(part(1, 2, 4, git={}), part(2, 2, 4, git={})) == []


def test_the_merge_marks_and_the_part_keys() -> None:
    from harness.config.option import Affects

    assert MERGE_MARKS == Affects.REQUEST | Affects.READING | Affects.PUBLISHED
    assert set(PART_KEYS) == {"config_hash", "shard", "n_queries", "settings", "packages", "git", "created"}


def test_a_dirty_part_is_named_in_the_note() -> None:
    _, (note,) = merge_shards([part(1, 2, 4), part(2, 2, 4, git={"commit": "c" * 40, "dirty": True})])
    assert "computed with commit cccccccccccc (1 of the parts with uncommitted changes):" in note
    _, (bare,) = merge_shards([part(1, 2, 4, git={}), part(2, 2, 4, git={})])
    assert "computed with no git commit recorded:" in bare


def test_the_merged_run_sits_beside_the_first_part() -> None:
    first = part(1, 2, 4)
    second = dataclasses.replace(part(2, 2, 4), run_dir=Path("/elsewhere/w-part2of2"))
    (merged,), _ = merge_shards([second, first])
    assert merged.run_dir == Path("/r/w-part1of2+1-parts")


def test_parts_that_share_a_setting_other_than_its_default_merge() -> None:
    settings = {"think_tags": "none", "api": {"max_reply_mb": 2.0}}
    (merged,), _ = merge_shards([part(1, 2, 4, settings=settings), part(2, 2, 4, settings=settings)])
    assert merged.config["settings"]["think_tags"] == "none" and len(merged.samples) == 4


def test_a_part_group_is_named_by_its_first_part() -> None:
    """Old parts of one whole hash that differ among themselves, and a part of another hash: the line names the
    first part of the group and what it does not share with the other run's part."""
    a1, a2 = part(1, 3, 6, "a"), part(2, 3, 6, "a", settings={"think_tags": "none"})
    b3 = part(3, 3, 6, "b", settings={"think_tags": "none"})
    with pytest.raises(HarnessError) as e:
        merge_shards([a1, a2, b3])
    assert str(e.value).startswith(
        "--shard parts /r/a-part1of3 and /r/b-part3of3 are not parts of one run: they differ in --think-tags "
    )


def test_parts_that_hold_fewer_queries_than_the_whole_claims_are_refused() -> None:
    parts = [part(k, 3, 8) for k in (1, 2, 3)]
    claimed = [
        dataclasses.replace(p, config=p.config | {"shard": p.config["shard"] | {"whole_queries": 9}}) for p in parts
    ]
    with pytest.raises(HarnessError, match=r"^run w: the parts do not hold each of its 9 queries once$"):
        merge_shards(claimed)


def test_parts_that_repeat_a_query_are_refused() -> None:
    one, two = part(1, 2, 4), part(2, 2, 4)
    twice = dataclasses.replace(two, samples=one.samples)  # part 2 holding part 1's queries again
    with pytest.raises(HarnessError, match=r"^run w: the parts do not hold each of its 4 queries once$"):
        merge_shards([one, twice])
