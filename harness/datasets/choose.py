"""From a --dataset value to its description and its splits: a line of the table (harness/datasets/__init__.py
DATASETS) or a user's dataset file (harness/datasets/files.py), loaded by the loader the description names; and
the description of a recorded run's dataset (its config.json), for reports written elsewhere."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from harness.datasets import DATASETS
from harness.datasets.description import Description, LoadCache, Source
from harness.datasets.files import read_dataset_file
from harness.types import Dataset, HarnessError


def is_dataset_file(value: str) -> bool:
    """Whether a --dataset value names a user's dataset file rather than a shipped dataset."""
    return value.endswith(".toml")


def describe_dataset(value: str) -> Description:
    """The description of a --dataset value: a line of DATASETS, or the user's dataset file it names."""
    if value in DATASETS:
        return DATASETS[value]
    if is_dataset_file(value):
        described = read_dataset_file(Path(value))
        name = described.file.name if described.file else value
        if name in DATASETS:
            raise HarnessError(f"dataset file {value}: name {name!r} is a shipped dataset's ({', '.join(DATASETS)})")
        return described
    raise HarnessError(
        f"unknown dataset {value!r}; choose from {', '.join(DATASETS)}, or a dataset file (.toml: docs/extending.md)"
    )


def dataset_name(value: str) -> str:
    """The name a --dataset value goes by in run ids and config.json: the table's key or the file's `name`."""
    described = describe_dataset(value)
    return described.file.name if described.file else value


Loader = Callable[[Description, str, Source, "LoadCache | None"], Dataset]


def load_dataset(
    name: str,
    split: str,
    data_dir: Path | None = None,
    archive: Path | None = None,
    password_file: Path | None = None,
    cache: LoadCache | None = None,
) -> Dataset:
    """One split of a shipped dataset (`name` a key of DATASETS) or of a user's dataset file (`name` its path), by
    the loader its description names; unknown names and splits are one clear error. With `cache`, a split loaded
    before with the same arguments is returned as it was (Datasets are immutable)."""
    description = describe_dataset(name)
    if split not in description.splits:
        raise HarnessError(
            f"dataset {dataset_name(name)} has no split {split!r}; choose from {', '.join(description.splits)}"
        )
    source = (data_dir, archive, password_file)
    key = (name, split, source)
    if cache is not None and key in cache.datasets:
        return cache.datasets[key]
    module, function = description.loader.split(":")
    loader: Loader = getattr(importlib.import_module(module), function)
    dataset = loader(description, split, source, cache)
    if cache is not None:
        cache.datasets[key] = dataset
    return dataset


def run_description(config: Mapping[str, Any]) -> Description:
    """The description of a recorded run's dataset (its config.json): the table's line, or what the run recorded
    of the user's dataset file (which may not be here). A record that says nothing is taken as private text
    without conditions."""
    name = config.get("dataset")
    if isinstance(name, str) and name in DATASETS:
        return DATASETS[name]
    recorded = config.get("dataset_file")
    recorded = recorded if isinstance(recorded, dict) else {}
    return Description(
        "",
        str(name),
        (),
        (0.0, 0.0),
        conditions=recorded.get("conditions") is True,
        templates="",
        private=recorded.get("private") is not False,
    )


def file_record(description: Description) -> dict[str, Any]:
    """What config.json records of a user's dataset file (`dataset_file`): enough for a report elsewhere."""
    file = description.file
    assert file is not None
    return {
        "path": str(file.path),
        "sha256": file.sha256,
        "conditions": description.conditions,
        "private": description.private,
        "templates": description.templates,
        "columns": dict(file.columns),
    }
