"""Row labels that keep every run in a table cell of its own: the model, plus each setting that tells runs apart."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import pandas as pd

from harness.config.keys import recorded
from harness.config.option import KEYED, name_of
from harness.results.read import IDENTITY, Run

GROUP_KEYS = ["dataset", "split", "variant", "labels"]  # one table each
# config.json keys that describe the machine or the invocation, not the prompts or the answers.
_NOT_IDENTITY = {"settings", "packages", "git", "config_hash", "n_queries", "label_range", "created", "finished"}


def text(key: str, value: Any) -> str:
    """A setting's value in words: chat / raw, limit all, none, ..."""
    if key == "chat":
        return "n/a" if value is None else "chat" if value else "raw"
    if key == "reasoning":
        return "reasoning" if value else "no reasoning"
    if key == "limit" and value is None:
        return "all"
    if value is None:
        return "none"
    out = value if isinstance(value, str) else json.dumps(value, default=str)
    return out if len(out) <= 24 else out[:21] + "..."


def show(key: str, value: Any) -> str:
    """A setting as a short tag: chat, raw, limit=all, backend=hf, template=t5-long, ..."""
    return text(key, value) if key in ("chat", "reasoning") else f"{key}={text(key, value)}"


def _flat(obj: Any, prefix: str = "") -> dict[str, str]:
    if isinstance(obj, dict):
        out: dict[str, str] = {}
        for k, v in obj.items():
            out |= _flat(v, f"{prefix}{k}.")
        return out
    return {prefix.rstrip("."): json.dumps(obj, sort_keys=True, default=str)}


def _told_apart(config: dict[str, Any]) -> dict[str, Any]:
    """What of a config.json can tell two runs apart: every entry but the machine's and the invocation's, and
    every setting its declaration marks as changing a key (harness/config/option.py KEYED), read from `settings`
    (a run recorded before a setting entered the identity says it only there), named as the identity names it."""
    settings = config.get("settings")
    marked = {name_of(d): v for d, v in recorded(settings if isinstance(settings, dict) else {}, KEYED).items()}
    return marked | {k: v for k, v in config.items() if k not in _NOT_IDENTITY}


def _config_differences(configs: Sequence[dict[str, Any]]) -> list[list[str]]:
    """For runs that agree on every IDENTITY setting, the other config.json entries they differ in, as tags."""
    flats = [_flat(_told_apart(c)) for c in configs]
    keys = sorted({k for f in flats for k in f})
    differing = [k for k in keys if len({f.get(k) for f in flats}) > 1]
    return [[show(k, json.loads(f[k]) if k in f else None) for k in differing] for f in flats]


def label_rows(table: pd.DataFrame, runs: Sequence[Run]) -> tuple[list[str], list[str]]:
    """Row labels (model and distinguishing settings) and notes on runs that repeat one setting.

    Within one table, runs of the same model and instruction that differ in an IDENTITY setting (backend, chat,
    template, scoring, parse mode, max tokens, stop, shot sampler, seed, limit, ...) are tagged with it, on every
    k, so that each keeps a row of its own. Runs that still share a cell differ elsewhere in config.json (dtype,
    template or data hashes), which is then named; runs of one identical setting are told apart by their ref."""
    labels = [str(m) for m in table["model"]]
    identities = [r.identity() for r in runs]
    live = table[~table["dry_run"].astype(bool)]
    for _, idx in live.groupby([*GROUP_KEYS, "model", "instr"], sort=False).groups.items():
        rows = list(idx)
        varying = [k for k in IDENTITY if len({show(k, identities[i][k]) for i in rows}) > 1]
        for i in rows:
            labels[i] += "".join(f" · {show(k, identities[i][k])}" for k in varying)
    notes = []
    for idx in _shared_cells(live, labels):
        for i, tags in zip(idx, _config_differences([runs[i].config for i in idx]), strict=True):
            labels[i] += "".join(f" · {t}" for t in tags)
    for idx in _shared_cells(live, labels):
        first = min(idx)  # the cell's first row: its label and k, before each run's ref joins its label
        same, k = labels[first], table.at[first, "shots"]
        refs = [str(table.at[i, "ref"]) for i in idx]
        for i in idx:
            labels[i] += f" · {table.at[i, 'ref']}"
        notes.append(f"{', '.join(refs)} are the same setting ({same}, k={k}): each is shown in a row of its own")
    return labels, notes


def _shared_cells(live: pd.DataFrame, labels: list[str]) -> list[list[int]]:
    cells: dict[tuple[Any, ...], list[int]] = defaultdict(list)
    for i in live.index:
        r = live.loc[i]
        cells[(*(r[k] for k in GROUP_KEYS), r["instr"], labels[i], r["shots"])].append(int(i))
    return [idx for idx in cells.values() if len(idx) > 1]
