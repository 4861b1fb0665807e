"""What a dataset is, for the table of datasets (harness/datasets/__init__.py DATASETS) and the modules it names:
its description, a user's dataset file, and the load cache a sweep's cells share."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from harness.types import Dataset, Example

Source = tuple[Path | None, Path | None, Path | None]  # (data_dir, archive, password_file) of a load


@dataclass(frozen=True)
class DatasetFile:
    """Where a user's dataset file (TOML) puts its splits and which of their columns hold what."""

    name: str  # its `name` (default: the file's stem): run ids and config.json's `dataset`
    path: Path  # the TOML file; its splits' paths are relative to its folder
    sha256: str  # of the TOML's bytes: config.json records it, with each split file's hash (the run's identity)
    splits: tuple[tuple[str, Path], ...]  # split name -> its CSV, TSV or JSONL file
    columns: tuple[tuple[str, str], ...]  # sentence1, sentence2, label (and condition) -> the file's column


@dataclass(frozen=True)
class Description:
    """One dataset: how it is read, and the facts about it that the stages ask for."""

    loader: str  # "module:function" (description, split, source, cache) -> Dataset, imported when a run loads it
    display: str  # its name in reports and tables
    splits: tuple[str, ...]  # the first is the few-shot pool where it is "train"
    label_range: tuple[float, float]
    # Items carry a condition (C-STS): shots are both conditions of a sentence pair, the bootstrap resamples sentence
    # pairs, and the condition-reading variants (qa, qa-embed, case settings, reannotate) apply.
    conditions: bool
    templates: str  # the folder of templates/ its prompts come from (csts, stsb), or a folder of the user's own
    private: bool = False  # its text may not be shared (C-STS's release terms): `report --shareable` replaces it
    published: bool = False  # numbers published on it are in harness/data/paper_results.csv (its `dataset` column)
    file: DatasetFile | None = None  # a user's dataset file; None: shipped with the harness


@dataclass
class LoadCache:
    """What loads already read, kept for as long as this object lives: the cells of a sweep share one, so each
    archive is decrypted and each split file parsed once per sweep, not once per cell. Keyed by the loads' own
    arguments; a failed load keeps nothing (the next cell fails the same way)."""

    files: dict[Source, tuple[dict[str, bytes], str]] = field(default_factory=dict)
    splits: dict[tuple[Source, str], tuple[Example, ...]] = field(default_factory=dict)
    datasets: dict[tuple[str, str, Source], Dataset] = field(default_factory=dict)
