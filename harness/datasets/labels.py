"""Alternative label sets (Tu et al. 2024 re-annotation of C-STS validation) and their seeded 70/30 split; labels
files of one's own (`--labels FILE`, as `run_eval.py reannotate` writes them), which may carry conditions too."""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from pathlib import Path

from harness.inputs import read_bytes
from harness.types import Dataset, Example, HarnessError

REANNOTATED_TSV = Path(__file__).parents[1] / "data" / "csts-val-reannotated.tsv"
LABEL_SETS = ("original", "reannotated")
SUBSETS = ("all", "reannotated-train", "reannotated-test")
# Each subset as paper_results.csv names the split it scores (Tu et al. 2024 evaluate on 30% of the re-annotated set).
SUBSET_SPLITS = {"reannotated-test": "reannotated-test-30pct", "reannotated-train": "reannotated-train-70pct"}
TEST_FRACTION = 0.30  # Tu et al. 2024, §5: 70% of the re-annotated instances for training, 30% for testing


HEADER = ("uid", "reannotated-label")  # the bundled file's; a labels file may add a third column, "condition"
CONDITION = "condition"


@dataclass(frozen=True)
class LabelsFile:
    """A labels TSV: uid (row position in its split) -> label (None: -1, left out), and conditions where it has the
    condition column (a rewritten-conditions data version, harness/variants/reannotate.py)."""

    labels: dict[str, float | None]
    conditions: dict[str, str]
    sha256: str


def read_labels_file(path: Path, what: str = "labels file") -> LabelsFile:
    """Parse `uid<TAB>reannotated-label[<TAB>condition]`; every problem is one HarnessError naming the line."""
    data = read_bytes(Path(path), what)
    try:
        lines = data.decode("utf-8").splitlines()
    except UnicodeDecodeError as e:
        raise HarnessError(f"{path}: not UTF-8 text (byte {e.start})") from None
    header = tuple(lines[0].rstrip("\r").split("\t")) if lines else ()
    if header not in (HEADER, (*HEADER, CONDITION)):
        raise HarnessError(f"{path}: expected the header 'uid<TAB>reannotated-label' (optionally <TAB>condition)")
    labels: dict[str, float | None] = {}
    conditions: dict[str, str] = {}
    for n, line in enumerate(lines[1:], start=2):
        fields = line.rstrip("\r").split("\t")
        if len(fields) != len(header):
            raise HarnessError(f"{path} line {n}: expected {len(header)} fields, got {len(fields)}")
        uid = fields[0].strip()
        if uid in labels:
            raise HarnessError(f"{path} line {n}: uid {uid} appears twice")
        try:
            value = float(fields[1])
        except ValueError:
            raise HarnessError(f"{path} line {n}: label {fields[1]!r} is not a number") from None
        if value != -1 and not 1 <= value <= 5:
            raise HarnessError(f"{path} line {n}: label {fields[1]} is outside the 1-5 scale (-1: invalid condition)")
        labels[uid] = None if value == -1 else value
        if len(fields) == 3:
            if not fields[2].strip():
                raise HarnessError(f"{path} line {n}: empty condition")
            conditions[uid] = fields[2]
    return LabelsFile(labels, conditions, hashlib.sha256(data).hexdigest())


def load_reannotated(path: Path = REANNOTATED_TSV) -> dict[str, float | None]:
    """uid (validation row position) -> re-annotated label; None where Tu et al. marked the condition invalid (-1)."""
    return read_labels_file(path, "re-annotated labels").labels


def labels_tsv(labels: dict[str, int | None], conditions: dict[str, str] | None = None) -> str:
    """A labels file's text (the format `read_labels_file` reads): None is written -1; conditions as one line."""
    header = [*HEADER, CONDITION] if conditions is not None else list(HEADER)
    lines = ["\t".join(header)]
    for uid, label in labels.items():
        fields = [uid, str(-1 if label is None else label)]
        if conditions is not None:
            fields.append(" ".join(conditions[uid].split()))
        lines.append("\t".join(fields))
    return "\n".join(lines) + "\n"


def conditions_hash(conditions: dict[str, str]) -> str:
    """The data version of a set of conditions: sha256 of its `uid<TAB>condition` lines in uid order, each condition
    on one line as a labels file holds it."""
    ordered = sorted(conditions.items(), key=lambda kv: (len(kv[0]), kv[0]))
    text = "".join(f"{uid}\t{' '.join(c.split())}\n" for uid, c in ordered)
    return hashlib.sha256(text.encode()).hexdigest()


def label_set_name(label_set: str) -> str:
    """How run ids name a label set: its own name, or a labels file's stem."""
    return label_set if label_set in LABEL_SETS else "labels-" + Path(label_set).stem


def apply_labels_file(dataset: Dataset, path: Path) -> tuple[Dataset, dict[str, int]]:
    """The rows the file labels, with its labels (and its conditions, where it has them): a new data version,
    hashed into file_hashes (hence config.json's data_hashes and config_hash)."""
    f = read_labels_file(path)
    lo, hi = dataset.label_range
    by_id = {e.id: e for e in dataset.examples}
    unknown = [u for u in f.labels if u not in by_id]
    if unknown:
        raise HarnessError(
            f"{path}: uid {unknown[0]} is not a row of the {dataset.name} {dataset.split} split "
            f"({len(unknown)} such uids): a labels file of another split?"
        )
    outside = [u for u, v in f.labels.items() if v is not None and not lo <= v <= hi]
    if outside:
        raise HarnessError(f"{path}: uid {outside[0]}'s label is outside the {lo:g}-{hi:g} scale of {dataset.name}")
    if f.conditions and not dataset.conditions:
        raise HarnessError(f"{path} has conditions, but {dataset.name} has none")

    def relabelled(e: Example) -> Example:
        return dataclasses.replace(e, label=f.labels[e.id], condition=f.conditions.get(e.id, e.condition))

    kept = tuple(relabelled(e) for e in dataset.examples if f.labels.get(e.id) is not None)
    if not kept:  # a run of n=0 would print no number and exit 0, as if it had scored something
        marked = sum(v is None for v in f.labels.values())
        raise HarnessError(
            f"{path}: labels no row of the {dataset.name} {dataset.split} split ({len(f.labels)} uids, {marked} of "
            "them marked -1, invalid condition): nothing to score"
        )
    left_out = {
        "not in the labels file": len(dataset.examples) - len(f.labels),
        "invalid condition (-1)": sum(v is None for v in f.labels.values()),
    }
    hashes = dataset.file_hashes | {f"labels:{Path(path).name}": f.sha256}
    if f.conditions:
        hashes["conditions"] = conditions_hash(f.conditions)  # every row's, as `reannotate` records it
    return dataclasses.replace(dataset, examples=kept, file_hashes=hashes), left_out


def apply_label_set(dataset: Dataset, label_set: str) -> tuple[Dataset, dict[str, int]]:
    """Swap in another label set; returns the dataset and counts of what was left out and why."""
    if label_set == "original":
        return dataset, {}
    if label_set not in LABEL_SETS:
        path = Path(label_set)
        if not path.exists():
            raise HarnessError(
                f"unknown label set {label_set!r}; choose from {', '.join(LABEL_SETS)}, or a labels file (none there)"
            )
        return apply_labels_file(dataset, path)
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
