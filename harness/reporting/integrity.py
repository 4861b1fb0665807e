"""Run folders a report can trust: unreadable ones skipped with a warning, copies of one run shown once, altered
and unverified ones flagged where their numbers are shown (results/manifest.py says which is which)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from harness.results.manifest import ALTERED, UNVERIFIED, VERIFIED
from harness.results.read import Run, load_run
from harness.types import HarnessError

# Beside the row label of every table a run appears in, so that no number of it is shown unflagged.
FLAGS = {ALTERED: "⚠ altered", UNVERIFIED: "unverified"}


def warn(line: str) -> None:
    print(f"warning: {line}", file=sys.stderr)


def flag(run: Run) -> str:
    """The row-label tag of a run folder that is not as written (or cannot be told to be): "" if verified."""
    tag = FLAGS.get(run.integrity.status)
    return f" · {tag}" if tag else ""


def note(run: Run) -> str | None:
    """What a reader should know about the folder behind a row; None when it is as written."""
    i = run.integrity
    if i.status == ALTERED:
        return f"run folder altered after it was written: {i.why}"
    if i.status == UNVERIFIED:
        return f"run folder {i.why}"
    return None


def load_readable(
    run_dirs: Sequence[Path], loaded: Mapping[Path, Run] | None = None, say: Callable[[str], None] = warn
) -> tuple[list[Run], list[str]]:
    """The runs of these folders, with notes: an unreadable folder is skipped with one warning naming it (the
    others are still reported); folders holding the same run (same setting, same samples.jsonl sha256) are
    kept once; an altered folder is kept, with a warning."""
    loaded = loaded or {}
    runs: list[Run] = []
    for d in run_dirs:
        try:
            runs.append(loaded[d] if d in loaded else load_run(d))
        except HarnessError as e:
            say(f"skipped: {e}")
    if not runs:
        raise HarnessError("no readable run folders to report on")
    kept: dict[tuple[str, ...], Run] = {}
    copies: dict[tuple[str, ...], list[Run]] = {}
    for run in runs:
        key = _same_run(run)
        if key is not None and key in kept:
            if kept[key].integrity.status != VERIFIED and run.integrity.status == VERIFIED:
                kept[key], run = run, kept[key]  # show the copy that is as written
            copies.setdefault(key, []).append(run)
        else:
            kept[key or (str(id(run)),)] = run
    notes = []
    for key, extra in copies.items():
        shown = ", ".join(f"`{r.run_dir}`" for r in extra[:3])
        shown += f" and {len(extra) - 3:,} more" if len(extra) > 3 else ""
        notes.append(
            f"{len(extra):,} more folder(s) hold the same run as `{kept[key].run_dir}` (same setting, samples.jsonl "
            f"sha256 {key[0][:12]}): shown once ({shown})"
        )
    for line in notes:
        say(line.replace("`", ""))
    for run in kept.values():
        if run.integrity.status == ALTERED:
            say(f"{run.run_dir}: {note(run)}")
    return list(kept.values()), notes


def _same_run(run: Run) -> tuple[str, ...] | None:
    """Runs with this key are copies: one samples.jsonl (by digest) under one setting; None: not known."""
    digest = run.integrity.samples_sha256
    if not digest:
        return None
    c = run.config
    return (digest, str(c.get("config_hash")), str(c.get("model")), str(c.get("dataset")), str(c.get("split")))
