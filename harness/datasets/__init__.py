"""Stage 1: read C-STS, STS-B and a user's own dataset files (the encrypted release, re-annotated labels) and
describe them.

`DATASETS` is the one table of the shipped datasets, and only the table; a user's dataset file (`--dataset
mine.toml`, harness/datasets/files.py) makes a `Description` (harness/datasets/description.py) of the same shape,
and harness/datasets/choose.py goes from a --dataset value to its description and loads its splits. Whatever
depends on a dataset's nature (its items carry a condition, its labels' scale, its templates, whether its text
may be shared) reads the description, never the dataset's name.
"""

from __future__ import annotations

from harness.datasets.description import DatasetFile, Description

__all__ = ["DATASETS", "DatasetFile", "Description"]


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
