"""Stage 1: read C-STS, STS-B and a user's own dataset files (the encrypted release, re-annotated labels) and
describe them.

`DATASETS` is the one table of the shipped datasets; a user's dataset file (`--dataset mine.toml`,
harness/datasets/files.py) makes a `Description` of the same shape. Whatever depends on a dataset's nature (its
items carry a condition, its labels' scale, its templates, whether its text may be shared) reads the description,
never the dataset's name.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


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


DATASETS: dict[str, Description] = {
    "csts": Description(
        "harness.datasets.load:load_csts",
        "C-STS",
        ("train", "validation", "test"),
        (1.0, 5.0),
        conditions=True,
        templates="csts",
        private=True,
        published=True,
    ),
    "stsb": Description(
        "harness.datasets.load:load_stsb",
        "STS-B",
        ("train", "validation"),
        (0.0, 5.0),
        conditions=False,
        templates="stsb",
        published=True,
    ),
}
