"""Alternative label sets (Tu et al. 2024 re-annotation of C-STS validation) and their seeded 70/30 split."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

from harness.types import Dataset, HarnessError

REANNOTATED_TSV = Path(__file__).parents[1] / "data" / "csts-val-reannotated.tsv"
LABEL_SETS = ("original", "reannotated")
SUBSETS = ("all", "reannotated-train", "reannotated-test")
# Each subset as paper_results.csv names the split it scores (Tu et al. 2024 evaluate on 30% of the re-annotated set).
SUBSET_SPLITS = {"reannotated-test": "reannotated-test-30pct", "reannotated-train": "reannotated-train-70pct"}
TEST_FRACTION = 0.30  # Tu et al. 2024, §5: 70% of the re-annotated instances for training, 30% for testing


def load_reannotated(path: Path = REANNOTATED_TSV) -> dict[str, float | None]:
    """uid (validation row position) -> re-annotated label; None where Tu et al. marked the condition invalid (-1)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise HarnessError(f"cannot read re-annotated labels {path}: {e.strerror}") from None
    if not lines or lines[0].strip().split("\t") != ["uid", "reannotated-label"]:
        raise HarnessError(f"{path}: expected the header 'uid<TAB>reannotated-label'")
    labels: dict[str, float | None] = {}
    for n, line in enumerate(lines[1:], start=2):
        fields = line.strip().split("\t")
        if len(fields) != 2:
            raise HarnessError(f"{path} line {n}: expected 2 fields, got {len(fields)}")
        try:
            value = float(fields[1])
        except ValueError:
            raise HarnessError(f"{path} line {n}: label {fields[1]!r} is not a number") from None
        if value != -1 and not 1 <= value <= 5:
            raise HarnessError(f"{path} line {n}: label {fields[1]} is outside the 1-5 scale (-1: invalid condition)")
        labels[fields[0]] = None if value == -1 else value
    return labels


def apply_label_set(dataset: Dataset, label_set: str) -> tuple[Dataset, dict[str, int]]:
    """Swap in another label set; returns the dataset and counts of what was left out and why."""
    if label_set == "original":
        return dataset, {}
    if label_set not in LABEL_SETS:
        raise HarnessError(f"unknown label set {label_set!r}; choose from {', '.join(LABEL_SETS)}")
    if (dataset.name, dataset.split) != ("csts", "validation"):
        raise HarnessError("--labels reannotated exists only for the C-STS validation split (Tu et al. 2024)")
    labels = load_reannotated()
    if len(labels) != len(dataset.examples):
        raise HarnessError(
            f"re-annotated labels cover {len(labels)} rows but the validation split has {len(dataset.examples)}: "
            "they are matched by row order, so the split file must be the official one"
        )
    kept = tuple(dataclasses.replace(e, label=labels[e.id]) for e in dataset.examples if labels[e.id] is not None)
    left_out = {"invalid condition (-1)": len(dataset.examples) - len(kept)}
    hashes = dataset.file_hashes | {"csts-val-reannotated.tsv": _sha256(REANNOTATED_TSV)}
    return dataclasses.replace(dataset, examples=kept, file_hashes=hashes), left_out


def take_subset(dataset: Dataset, subset: str, split_seed: int = 0) -> Dataset:
    """The seeded 70/30 part of the re-annotated instances (Tu et al.'s exact split is unpublished)."""
    if subset == "all":
        return dataset
    if subset not in SUBSETS:
        raise HarnessError(f"unknown subset {subset!r}; choose from {', '.join(SUBSETS)}")
    if (dataset.name, dataset.split) != ("csts", "validation"):
        raise HarnessError(f"--subset {subset} exists only for the C-STS validation split")
    # The split is drawn over the instances Tu et al. kept, whatever label set is scored, so that
    # original and re-annotated labels can be compared on the very same items.
    valid = [uid for uid, label in load_reannotated().items() if label is not None]
    test_ids = reannotated_test_ids(valid, split_seed)
    part = test_ids if subset == "reannotated-test" else frozenset(valid) - test_ids
    return dataclasses.replace(dataset, examples=tuple(e for e in dataset.examples if e.id in part))


def reannotated_test_ids(ids: list[str], split_seed: int = 0) -> frozenset[str]:
    """Order ids by a hash of (seed, id) and take the last 30%: stable across runs, machines and Python versions."""
    ranked = sorted(ids, key=lambda i: hashlib.sha256(f"{split_seed}\x1f{i}".encode()).hexdigest())
    n_test = round(len(ranked) * TEST_FRACTION)
    return frozenset(ranked[len(ranked) - n_test :])


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
