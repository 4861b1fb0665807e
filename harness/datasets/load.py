"""Load C-STS (a directory of CSVs or the encrypted release) and the bundled STS-B into Examples: the loaders their
lines of DATASETS name (harness/datasets/__init__.py; harness/datasets/choose.py calls them)."""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterable
from pathlib import Path

from harness.datasets.description import Description, LoadCache, Source
from harness.datasets.release import OBTAIN_HINT, SPLIT_FILES, decrypt_release, find_password
from harness.datasets.rows import check_fields, csv_header, csv_rows, decode, label_value, sha256
from harness.inputs import read_bytes
from harness.types import Dataset, Example, HarnessError

CSTS_COLUMNS = ("sentence1", "sentence2", "condition", "label")
STSB_COLUMNS = ("sentence1", "sentence2", "score")
STSB_DIR = Path(__file__).parents[1] / "data" / "stsb"
_STSB_FILES = {"train": "train.tsv", "validation": "dev.tsv"}


def parse_csts_csv(data: bytes, source: str, split: str, label_range: tuple[float, float]) -> tuple[Example, ...]:
    """Rows of one C-STS split (labels on `label_range`: DATASETS' line); a missing condition is empty text, as in
    the reference code."""
    text = decode(data, source)
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = csv_header(reader, source)
    missing = [c for c in CSTS_COLUMNS if c not in header]
    if not header:
        raise HarnessError(f"{source} is empty (expected a header: {','.join(CSTS_COLUMNS)})")
    if missing:
        raise HarnessError(
            f"{source}: missing column(s) {', '.join(missing)}; found {', '.join(header)} "
            f"(expected {','.join(CSTS_COLUMNS)})"
        )
    examples = []
    for i, row in enumerate(csv_rows(reader, source)):
        where = f"{source} row {i + 2}"
        check_fields(row, header, where, "an unquoted comma in a text, or a decimal comma?")  # type: ignore[arg-type]
        s1, s2 = row["sentence1"], row["sentence2"]
        if not s1.strip() or not s2.strip():
            raise HarnessError(f"{where}: empty sentence")
        label = label_value(row["label"].strip(), where, label_range, hidden_ok=split == "test")
        examples.append(Example(str(i), s1, s2, row["condition"] or "", label))
    if not examples:
        raise HarnessError(f"{source} has a header but no rows")
    return tuple(examples)


def parse_stsb_tsv(data: bytes, source: str, label_range: tuple[float, float]) -> tuple[Example, ...]:
    """GLUE STS-B rows; quotes are literal text in this format, so quoting is off."""
    text = decode(data, source)
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter="\t", quoting=csv.QUOTE_NONE)
    header = csv_header(reader, source)
    if not header:
        raise HarnessError(f"{source} is empty")
    missing = [c for c in STSB_COLUMNS if c not in header]
    if missing:
        raise HarnessError(f"{source}: missing column(s) {', '.join(missing)}; found {', '.join(header)}")
    examples = []
    for i, row in enumerate(csv_rows(reader, source)):
        where = f"{source} row {i + 2}"
        check_fields(row, header, where, "a tab in a text?")  # type: ignore[arg-type]
        if not row["sentence1"].strip() or not row["sentence2"].strip():
            raise HarnessError(f"{where}: empty sentence")
        label = label_value(row["score"], where, label_range, hidden_ok=False)
        examples.append(Example(str(i), row["sentence1"], row["sentence2"], "", label))
    if not examples:
        raise HarnessError(f"{source} has a header but no rows")
    return tuple(examples)


def read_csts_files(
    data_dir: Path | None, archive: Path | None, password_file: Path | None, cache: LoadCache | None = None
) -> tuple[dict[str, bytes], str]:
    """Raw split files from the archive (decrypted in memory) or a directory; returns (files, origin)."""
    if cache is None:
        return _read_csts_files(data_dir, archive, password_file)
    key = (data_dir, archive, password_file)
    if key not in cache.files:
        cache.files[key] = _read_csts_files(data_dir, archive, password_file)
    return cache.files[key]


def _read_csts_files(
    data_dir: Path | None, archive: Path | None, password_file: Path | None
) -> tuple[dict[str, bytes], str]:
    if archive is not None:
        found = find_password(password_file)
        if found is None:
            raise HarnessError("--archive needs --password-file FILE (or CSTS_PASSWORD in the environment)")
        return decrypt_release(archive, *found), str(archive)
    if data_dir is None and os.environ.get("CSTS_DATA_DIR"):
        data_dir = Path(os.environ["CSTS_DATA_DIR"])
    if data_dir is None:
        raise HarnessError(f"no C-STS data given: {OBTAIN_HINT}")
    if Path(data_dir).exists() and not Path(data_dir).is_dir():
        raise HarnessError(f"C-STS data directory {data_dir} is not a directory (--archive takes csts.tar.enc)")
    if not Path(data_dir).is_dir():
        raise HarnessError(f"C-STS data directory {data_dir} does not exist: {OBTAIN_HINT}")
    files = {}
    for name in SPLIT_FILES:
        path = Path(data_dir) / name
        if not os.path.lexists(path):
            continue  # only the splits a run needs are required; checked by the caller
        files[name] = read_bytes(path, "C-STS split file")
    return files, str(data_dir)


def load_csts(description: Description, split: str, source: Source, cache: LoadCache | None) -> Dataset:
    """The evaluated split plus the train split as the few-shot pool; `source`: (data_dir, archive, password_file)."""
    files, origin = read_csts_files(*source, cache)
    needed = {f"csts_{s}.csv" for s in ("train", split)}
    absent = sorted(needed - files.keys())
    if absent:
        raise HarnessError(f"{origin} has no {', '.join(absent)}: {OBTAIN_HINT}")

    def rows(name: str) -> tuple[Example, ...]:  # one split file, parsed once per cache
        key = (source, name)
        if cache is not None and key in cache.splits:
            return cache.splits[key]
        examples = parse_csts_csv(files[f"csts_{name}.csv"], f"{origin}/csts_{name}.csv", name, description.label_range)
        if cache is not None:
            cache.splits[key] = examples
        return examples

    examples = rows(split)
    pool = examples if split == "train" else rows("train")
    hashes = {name: sha256(files[name]) for name in sorted(needed)}
    return Dataset("csts", split, examples, pool, description.label_range, hashes, description.conditions)


def load_stsb(description: Description, split: str, source: Source, cache: LoadCache | None) -> Dataset:
    """STS-B from the bundled GLUE files: validation is GLUE's dev.tsv (test labels were never released)."""
    raw = {}
    for s in {"train", split}:
        path = STSB_DIR / _STSB_FILES[s]
        raw[s] = read_bytes(path, "bundled STS-B file")
    examples = parse_stsb_tsv(raw[split], f"stsb/{_STSB_FILES[split]}", description.label_range)
    pool = parse_stsb_tsv(raw["train"], "stsb/train.tsv", description.label_range) if split != "train" else examples
    hashes = {_STSB_FILES[s]: sha256(b) for s, b in sorted(raw.items())}
    return Dataset("stsb", split, examples, pool, description.label_range, hashes)


def pair_key(example: Example) -> tuple[str, str]:
    """A sentence pair regardless of order, so (a, b) and (b, a) count as one pair."""
    a, b = example.sentence1, example.sentence2
    return (a, b) if a <= b else (b, a)


def pair_ids(examples: Iterable[Example]) -> dict[str, str]:
    """Example id -> id of the first example with the same sentence pair: one cluster per pair."""
    first: dict[tuple[str, str], str] = {}
    return {e.id: first.setdefault(pair_key(e), e.id) for e in examples}
