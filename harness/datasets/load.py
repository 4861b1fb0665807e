"""Load C-STS (a directory of CSVs or the encrypted release) and the bundled STS-B into Examples."""

from __future__ import annotations

import csv
import hashlib
import io
import math
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from harness.datasets.release import OBTAIN_HINT, SPLIT_FILES, decrypt_release, find_password
from harness.inputs import read_bytes
from harness.types import Dataset, Example, HarnessError

CSTS_COLUMNS = ("sentence1", "sentence2", "condition", "label")
STSB_COLUMNS = ("sentence1", "sentence2", "score")
LABEL_RANGES = {"csts": (1.0, 5.0), "stsb": (0.0, 5.0)}
SPLITS = {"csts": ("train", "validation", "test"), "stsb": ("train", "validation")}
STSB_DIR = Path(__file__).parents[1] / "data" / "stsb"
_STSB_FILES = {"train": "train.tsv", "validation": "dev.tsv"}


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _label(value: str, where: str, label_range: tuple[float, float], *, hidden_ok: bool) -> float | None:
    """Parse a label cell; -1 marks a hidden label in the C-STS test split, and only there.

    A label outside the dataset's scale (C-STS 1-5, STS-B 0-5) is an error, not a number to keep: it would
    enter Spearman and MSE as if it were a rating (a C-STS "17", a validation "-1").
    """
    try:
        number = float(value)
    except ValueError:
        raise HarnessError(f"{where}: label {value!r} is not a number") from None
    if not math.isfinite(number):
        raise HarnessError(f"{where}: label {value!r} is not a finite number")
    if hidden_ok and number == -1:
        return None
    lo, hi = label_range
    if not lo <= number <= hi:
        hidden = " (-1 means hidden only in the test split)" if number == -1 else ""
        raise HarnessError(f"{where}: label {value} is outside the {lo:g}-{hi:g} scale{hidden}")
    return number


def _csv_error(e: csv.Error, reader: csv.DictReader[str], source: str) -> HarnessError:
    # The csv module's one common failure on real files is its field size limit (131,072 characters),
    # which in practice means an unclosed quote swallowed the rest of the file into one cell.
    hint = " (an unclosed quote?)" if "field larger than field limit" in str(e) else ""
    # line_num is still 0 when the header itself fails: the quote opened on line 1.
    return HarnessError(f"{source} line {reader.line_num or 1}: {e}{hint}")


def _header(reader: csv.DictReader[str], source: str) -> list[str]:
    try:
        return list(reader.fieldnames or [])
    except csv.Error as e:
        raise _csv_error(e, reader, source) from None


def _rows(reader: csv.DictReader[str], source: str) -> Iterator[dict[str, str]]:
    """The reader's rows; a csv error becomes one line naming the file and line."""
    try:
        yield from reader
    except csv.Error as e:
        raise _csv_error(e, reader, source) from None


def _fields(row: dict[str | None, object], header: list[str], where: str, why: str) -> None:
    """One error for a row whose field count is not the header's. csv.DictReader puts surplus fields under the
    key None and fills missing ones with None: an unquoted decimal comma (`...,The cond.,3,5`) would otherwise
    be read as label 3 with the 5 dropped, and a row of 10,000 fields accepted."""
    extra = row.get(None)
    if isinstance(extra, list) and extra:
        got = len(header) + len(extra)
        hint = f" ({why})" if got <= 2 * len(header) else ""
        raise HarnessError(f"{where}: {got} fields, the header has {len(header)}{hint}")
    short = sum(value is None for key, value in row.items() if key is not None)
    if short:
        raise HarnessError(f"{where}: {len(header) - short} fields, the header has {len(header)} (too few fields)")


def parse_csts_csv(data: bytes, source: str, split: str) -> tuple[Example, ...]:
    """Rows of one C-STS split; a missing condition is empty text, as in the reference code."""
    text = _decode(data, source)
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = _header(reader, source)
    missing = [c for c in CSTS_COLUMNS if c not in header]
    if not header:
        raise HarnessError(f"{source} is empty (expected a header: {','.join(CSTS_COLUMNS)})")
    if missing:
        raise HarnessError(
            f"{source}: missing column(s) {', '.join(missing)}; found {', '.join(header)} "
            f"(expected {','.join(CSTS_COLUMNS)})"
        )
    examples = []
    for i, row in enumerate(_rows(reader, source)):
        where = f"{source} row {i + 2}"
        _fields(row, header, where, "an unquoted comma in a text, or a decimal comma?")  # type: ignore[arg-type]
        s1, s2 = row["sentence1"], row["sentence2"]
        if not s1.strip() or not s2.strip():
            raise HarnessError(f"{where}: empty sentence")
        label = _label(row["label"].strip(), where, LABEL_RANGES["csts"], hidden_ok=split == "test")
        examples.append(Example(str(i), s1, s2, row["condition"] or "", label))
    if not examples:
        raise HarnessError(f"{source} has a header but no rows")
    return tuple(examples)


def parse_stsb_tsv(data: bytes, source: str) -> tuple[Example, ...]:
    """GLUE STS-B rows; quotes are literal text in this format, so quoting is off."""
    text = _decode(data, source)
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter="\t", quoting=csv.QUOTE_NONE)
    header = _header(reader, source)
    if not header:
        raise HarnessError(f"{source} is empty")
    missing = [c for c in STSB_COLUMNS if c not in header]
    if missing:
        raise HarnessError(f"{source}: missing column(s) {', '.join(missing)}; found {', '.join(header)}")
    examples = []
    for i, row in enumerate(_rows(reader, source)):
        where = f"{source} row {i + 2}"
        _fields(row, header, where, "a tab in a text?")  # type: ignore[arg-type]
        if not row["sentence1"].strip() or not row["sentence2"].strip():
            raise HarnessError(f"{where}: empty sentence")
        label = _label(row["score"], where, LABEL_RANGES["stsb"], hidden_ok=False)
        examples.append(Example(str(i), row["sentence1"], row["sentence2"], "", label))
    if not examples:
        raise HarnessError(f"{source} has a header but no rows")
    return tuple(examples)


def _decode(data: bytes, source: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise HarnessError(f"{source} is not UTF-8 text") from None


Source = tuple[Path | None, Path | None, Path | None]  # (data_dir, archive, password_file) of a load


@dataclass
class LoadCache:
    """What loads already read, kept for as long as this object lives: the cells of a sweep share one, so each
    archive is decrypted and each split file parsed once per sweep, not once per cell. Keyed by the loads' own
    arguments; a failed load keeps nothing (the next cell fails the same way)."""

    files: dict[Source, tuple[dict[str, bytes], str]] = field(default_factory=dict)
    splits: dict[tuple[Source, str], tuple[Example, ...]] = field(default_factory=dict)
    datasets: dict[tuple[str, str, Source], Dataset] = field(default_factory=dict)


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


def load_csts(split: str, source: Source, cache: LoadCache | None) -> Dataset:
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
        examples = parse_csts_csv(files[f"csts_{name}.csv"], f"{origin}/csts_{name}.csv", name)
        if cache is not None:
            cache.splits[key] = examples
        return examples

    examples = rows(split)
    pool = examples if split == "train" else rows("train")
    hashes = {name: sha256(files[name]) for name in sorted(needed)}
    return Dataset("csts", split, examples, pool, LABEL_RANGES["csts"], hashes)


def load_stsb(split: str, stsb_dir: Path = STSB_DIR) -> Dataset:
    """STS-B from the bundled GLUE files: validation is GLUE's dev.tsv (test labels were never released)."""
    raw = {}
    for s in {"train", split}:
        path = stsb_dir / _STSB_FILES[s]
        raw[s] = read_bytes(path, "bundled STS-B file")
    examples = parse_stsb_tsv(raw[split], f"stsb/{_STSB_FILES[split]}")
    pool = parse_stsb_tsv(raw["train"], "stsb/train.tsv") if split != "train" else examples
    hashes = {_STSB_FILES[s]: sha256(b) for s, b in sorted(raw.items())}
    return Dataset("stsb", split, examples, pool, LABEL_RANGES["stsb"], hashes)


def load_dataset(
    name: str,
    split: str,
    data_dir: Path | None = None,
    archive: Path | None = None,
    password_file: Path | None = None,
    cache: LoadCache | None = None,
) -> Dataset:
    """Dispatch on the dataset name; unknown names and splits are one clear error. With `cache`, a split
    loaded before with the same arguments is returned as it was (Datasets are immutable)."""
    if name not in SPLITS:
        raise HarnessError(f"unknown dataset {name!r}; choose from {', '.join(SPLITS)}")
    if split not in SPLITS[name]:
        raise HarnessError(f"dataset {name} has no split {split!r}; choose from {', '.join(SPLITS[name])}")
    source = (data_dir, archive, password_file)
    key = (name, split, source)
    if cache is not None and key in cache.datasets:
        return cache.datasets[key]
    dataset = load_csts(split, source, cache) if name == "csts" else load_stsb(split)
    if cache is not None:
        cache.datasets[key] = dataset
    return dataset


def pair_key(example: Example) -> tuple[str, str]:
    """A sentence pair regardless of order, so (a, b) and (b, a) count as one pair."""
    a, b = example.sentence1, example.sentence2
    return (a, b) if a <= b else (b, a)


def pair_ids(examples: Iterable[Example]) -> dict[str, str]:
    """Example id -> id of the first example with the same sentence pair: one cluster per pair."""
    first: dict[tuple[str, str], str] = {}
    return {e.id: first.setdefault(pair_key(e), e.id) for e in examples}
