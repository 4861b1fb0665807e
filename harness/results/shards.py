"""The parts of a run split with `--shard K/N` (a cluster's job array), merged back into the one run they cut up.

A part holds the queries at positions K-1, K-1+N, ... of the whole run (harness/runner.py prepare), with the shots
drawn for the whole run, and its config.json names the whole: `shard` = {part, of, whole_hash, whole_queries}.
Parts are merged only when every one is as written (its manifest.json checked: results/manifest.py), all N are
there once each, they agree on everything but the part (every setting marked REQUEST, READING or PUBLISHED among
them: harness/config/option.py `Affects`, so a new setting cannot be forgotten) and were computed with the same
code (git commit), and together they hold each query once. Parts that differ are refused in one line naming the
setting or the commits: their merged number is one that no one-machine run gives. The samples are
put back in the whole run's order (position i came from part i mod N), so every number a report recomputes from
them (metrics, bootstrap CIs, fallback spread) is the one-machine run's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.config.checks import MAX_SHARDS
from harness.config.keys import recorded
from harness.config.option import Affects
from harness.results.manifest import VERIFIED, Integrity
from harness.results.read import Run
from harness.types import HarnessError

# config.json keys that may differ between the parts of one run (the rest must be equal). `settings` is compared
# by its marks (MERGE_MARKS), `git` by its commit.
PART_KEYS = ("config_hash", "shard", "n_queries", "settings", "packages", "git", "created")
MERGE_MARKS = Affects.REQUEST | Affects.READING | Affects.PUBLISHED  # what the parts of one run must share


def merge_shards(runs: Sequence[Run]) -> tuple[list[Run], list[str]]:
    """`runs` with the parts of each sharded run replaced by the merged run (where the first part was), and one
    note per merge. A part that is altered or unverified, a missing or repeated part, or parts that disagree:
    one HarnessError line naming the folder (merged numbers would not be the whole run's)."""
    groups: dict[str, list[Run]] = {}
    order: list[Run | str] = []
    for run in runs:
        shard = run.config.get("shard")
        if not isinstance(shard, dict):
            order.append(run)
            continue
        key = str(shard.get("whole_hash"))
        if key not in groups:
            order.append(key)
        groups.setdefault(key, []).append(run)
    for parts in groups.values():
        _refuse_mixed(parts, [p for other in groups.values() if other is not parts for p in other])
    merged = {key: _merge(parts) for key, parts in groups.items()}
    out = [merged[x] if isinstance(x, str) else x for x in order]
    notes = [_note(merged[k], groups[k]) for k in groups]
    return out, notes


def _note(merged: Run, parts: Sequence[Run]) -> str:
    names = ", ".join(f"`{p.run_dir}`" for p in parts)
    return (
        f"`{merged.run_dir.name}` is {len(parts)} --shard parts merged (each checked against its manifest), "
        f"computed with {_code(parts)}: {names}"
    )


def _commit(run: Run) -> object:
    git = run.config.get("git")
    return git.get("commit") if isinstance(git, dict) else None


def _code(parts: Sequence[Run]) -> str:
    """The commit the parts were computed with, as the merged report names it."""
    commit, *_ = {_commit(p) for p in parts}  # one: parts from two commits are refused (`differing`)
    dirty = [p for p in parts if isinstance(p.config.get("git"), dict) and p.config["git"].get("dirty")]
    said = f"commit {str(commit)[:12]}" if commit else "no git commit recorded"
    return said + (f" ({len(dirty)} of the parts with uncommitted changes)" if dirty else "")


def differing(a: Run, b: Run) -> list[str]:
    """The settings marked MERGE_MARKS that two runs do not share, as "--flag (a's, b's)", and their commits."""
    ours = recorded(a.config.get("settings") or {}, MERGE_MARKS)
    theirs = recorded(b.config.get("settings") or {}, MERGE_MARKS)
    why = [f"{d.flag} ({ours[d]!r}, {theirs[d]!r})" for d in ours if ours[d] != theirs[d]]
    if _commit(a) != _commit(b):
        why.append(f"the git commit ({_commit(a)}, {_commit(b)})")
    return why


def _refuse_mixed(parts: Sequence[Run], others: Sequence[Run]) -> None:
    """Parts of one run (one whole_hash) that another run's parts would complete: the same split of the same
    queries, run with a setting (or a commit) of their own. Said in one line, naming what differs, instead of
    each run's parts being called missing."""
    first = parts[0].config["shard"]
    have = {p.config["shard"].get("part") for p in parts}
    for other in others:
        shard = other.config["shard"]
        same_cut = (shard.get("of"), shard.get("whole_queries")) == (first.get("of"), first.get("whole_queries"))
        if same_cut and shard.get("part") not in have and (why := differing(parts[0], other)):
            raise HarnessError(
                f"--shard parts {parts[0].run_dir} and {other.run_dir} are not parts of one run: they differ in "
                f"{'; '.join(why)}; not merged (run every part with the same settings and code)"
            )


def _checked(run: Run) -> dict[str, Any]:
    """The part's recorded `shard` (config.json), its numbers checked before anything counts with them: `part` and
    `of` integers with 1 <= part <= of <= MAX_SHARDS, `whole_queries` a count (issue 41: `of` = 10**12 hung the
    merge, "three" ended it in a traceback)."""
    shard = run.config["shard"]
    k, n, total = shard.get("part"), shard.get("of"), shard.get("whole_queries")
    if not all(type(x) is int for x in (k, n, total)) or not (1 <= k <= n <= MAX_SHARDS and total >= 0):
        shown = {key: shard.get(key) for key in ("part", "of", "whole_queries")}
        raise HarnessError(
            f"--shard part {run.run_dir}: config.json's shard {str(shown)[:120]} is not part K of N <= "
            f"{MAX_SHARDS:,} parts of a run of Q queries"
        )
    return dict(shard)


def _merge(parts: Sequence[Run]) -> Run:
    first = _checked(parts[0])
    n, whole_hash, total = first["of"], first.get("whole_hash"), first["whole_queries"]
    by_part: dict[int, Run] = {}
    for run in parts:
        if run.integrity.status != VERIFIED:
            raise HarnessError(
                f"--shard part {run.run_dir} is {run.integrity.status} ({run.integrity.why}): not merged"
            )
        shard = _checked(run)
        if why := differing(parts[0], run):
            raise HarnessError(
                f"--shard part {run.run_dir} is not a part of the same run as {parts[0].run_dir}: they differ in "
                f"{'; '.join(why)}; not merged"
            )
        if (shard.get("of"), shard.get("whole_queries")) != (n, total) or _shared(run) != _shared(parts[0]):
            raise HarnessError(f"--shard part {run.run_dir} is not a part of the same run as {parts[0].run_dir}")
        k: int = shard["part"]
        if k in by_part:
            raise HarnessError(f"--shard part {k}/{n} of run {whole_hash} twice: {by_part[k].run_dir}, {run.run_dir}")
        if len(run.samples) != run.config.get("n_queries"):
            raise HarnessError(f"--shard part {run.run_dir} holds {len(run.samples)} of its {run.config['n_queries']}")
        by_part[k] = run
    if len(by_part) < n:  # the first few missing, in at most len(by_part) + 3 steps: N may be large
        missing: list[str] = []
        k = 1
        while len(missing) < 3 and k <= n:
            missing += [] if k in by_part else [f"{k}/{n}"]
            k += 1
        more = f" and {n - len(by_part) - 3:,} more" if n - len(by_part) > 3 else ""
        raise HarnessError(
            f"run {whole_hash}: --shard part(s) {', '.join(missing)}{more} missing (from {parts[0].run_dir})"
        )
    ordered = [by_part[k] for k in range(1, int(n) + 1)]
    if sum(len(r.samples) for r in ordered) != total:  # before counting to `total`, which a config.json may inflate
        raise HarnessError(f"run {whole_hash}: the parts do not hold each of its {total:,} queries once")
    samples, extras = [], []
    for i in range(int(total)):  # position i of the whole run: part i mod N, its (i // N)-th sample
        run, j = ordered[i % int(n)], i // int(n)
        if j >= len(run.samples):
            raise HarnessError(f"run {whole_hash}: the parts hold fewer than its {total} queries")
        samples.append(run.samples[j])
        extras.append(run.extras[j])
    if sum(len(r.samples) for r in ordered) != total or len({s.id for s in samples}) != total:
        raise HarnessError(f"run {whole_hash}: the parts do not hold each of its {total} queries once")
    return Run(
        run_dir=ordered[0].run_dir.parent / f"{ordered[0].run_dir.name}+{int(n) - 1}-parts",
        config=_whole_config(ordered[0].config, int(total)),
        samples=tuple(samples),
        stored_metrics=_stored(ordered),
        extras=tuple(extras),
        integrity=Integrity(VERIFIED, "", ""),
    )


def _shared(run: Run) -> dict[str, Any]:
    return {k: v for k, v in run.config.items() if k not in PART_KEYS}


def _whole_config(config: dict[str, Any], total: int) -> dict[str, Any]:
    whole = {k: v for k, v in config.items() if k != "shard"}
    whole["config_hash"] = config["shard"]["whole_hash"]
    whole["n_queries"] = total
    whole["settings"] = dict(config.get("settings") or {}) | {"shard": None}
    return whole


def _stored(parts: Sequence[Run]) -> dict[str, Any]:
    """What the parts' metrics.json say about the whole run: nothing a report would check its recomputed
    numbers against (each part's Spearman is its own), but a dry run stays a dry run."""
    return {"dry_run": True} if all(p.stored_metrics.get("dry_run") for p in parts) else {}
