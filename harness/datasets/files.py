"""A user's own dataset: `--dataset mine.toml`, a small TOML file beside its CSV, TSV or JSONL split files.

```toml
name = "toy-sts"          # run ids, config.json and reports (default: the file's stem); not a shipped dataset's
labels = [0, 5]           # the label scale: a label outside it is an error, and the chance band and MSE use it
templates = "stsb"        # the bundled templates of its kind (csts: with a condition, stsb: without), or a folder
private = false           # true: `report --shareable` replaces its text, as for C-STS
[splits]                  # split -> file, relative to this file; .csv, .tsv or .jsonl
train = "train.csv"       # the few-shot pool (optional: without it, --shots 0 only)
validation = "dev.csv"
[columns]                 # the harness's field -> the file's column (default: the field's own name)
sentence1 = "text_a"
sentence2 = "text_b"
label = "score"
condition = "aspect"      # only for a dataset whose items carry a condition (then like C-STS throughout)
```

Every failure (a missing key, a column the split files lack, a label off the scale, an empty file) is one line
naming the file. The file is read through harness/inputs.py's doors (regular files only, UTF-8).
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from harness.datasets.description import DatasetFile, Description, Source
from harness.datasets.rows import check_fields, csv_header, csv_rows, decode, label_value, sha256
from harness.inputs import check_regular, read_bytes
from harness.types import Dataset, Example, HarnessError

KEYS = ("name", "labels", "templates", "private", "splits", "columns")
FIELDS = ("sentence1", "sentence2", "label", "condition")  # condition: only when mapped
FORMATS = {".csv": ",", ".tsv": "\t", ".jsonl": None}
BUNDLED_TEMPLATES = {"csts": True, "stsb": False}  # the folders of templates/ -> whether they show a condition
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_read: dict[tuple[Path, int, int], Description] = {}  # (file, mtime, size) -> its description


def read_dataset_file(path: Path) -> Description:
    """A user's dataset file, checked whole before any split is read. Read once per version of the file."""
    check_regular(path, "--dataset file")
    stat = os.stat(path)
    key = (path.resolve(), stat.st_mtime_ns, stat.st_size)
    if key not in _read:
        _read[key] = _parse(path, read_bytes(path, "--dataset file"))
    return _read[key]


def _parse(path: Path, data: bytes) -> Description:
    where = f"dataset file {path}"
    try:
        table = tomllib.loads(decode(data, where))
    except tomllib.TOMLDecodeError as e:
        raise HarnessError(f"{where}: not valid TOML: {e}") from None
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise HarnessError(f"{where}: unknown key(s) {', '.join(unknown)}; it takes {', '.join(KEYS)}")
    name = _text(table, "name", where, path.stem)
    if not _NAME.fullmatch(name):
        raise HarnessError(f"{where}: name {name!r} must be letters, digits, '.', '_' or '-'")
    lo, hi = _labels(table.get("labels"), where)
    splits = _splits(table.get("splits"), path, where)
    columns = _columns(table.get("columns", {}), where)
    conditions = "condition" in columns
    templates = _text(table, "templates", where, "csts" if conditions else "stsb")
    if templates in BUNDLED_TEMPLATES:
        if BUNDLED_TEMPLATES[templates] and not conditions:
            raise HarnessError(f"{where}: templates {templates!r} show a condition; map columns.condition or use stsb")
    elif not (path.parent / templates).is_dir():
        raise HarnessError(f"{where}: templates {templates!r} is neither csts, stsb nor a folder beside the file")
    else:
        templates = str((path.parent / templates).resolve())
    private = table.get("private", False)
    if not isinstance(private, bool):
        raise HarnessError(f"{where}: private must be true or false")
    file = DatasetFile(name, path, sha256(data), tuple(splits.items()), tuple(columns.items()))
    loader = "harness.datasets.files:load_file"
    return Description(loader, name, tuple(splits), (lo, hi), conditions, templates, private, False, file)


def _text(table: Mapping[str, Any], key: str, where: str, default: str) -> str:
    value = table.get(key, default)
    if not isinstance(value, str) or not value.strip():
        raise HarnessError(f"{where}: {key} must be a non-empty string")
    return value


def _labels(value: Any, where: str) -> tuple[float, float]:
    ok = isinstance(value, list) and len(value) == 2
    ok = ok and all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in value)
    if not ok or not value[0] < value[1]:
        raise HarnessError(f"{where}: labels must be the scale's two ends, lowest first (labels = [0, 5])")
    return float(value[0]), float(value[1])


def _splits(value: Any, path: Path, where: str) -> dict[str, Path]:
    if not isinstance(value, dict) or not value:
        raise HarnessError(f'{where}: [splits] must name at least one split file (validation = "dev.csv")')
    splits = {}
    for split, file in value.items():
        if not isinstance(file, str) or not _NAME.fullmatch(split):
            raise HarnessError(f"{where}: splits.{split} must be a file name")
        if Path(file).suffix not in FORMATS:
            raise HarnessError(f"{where}: splits.{split} {file!r} is not {', '.join(FORMATS)}")
        splits[split] = path.parent / file
        check_regular(splits[split], f"{where}: splits.{split}")
    return splits


def _columns(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, dict) or not set(value) <= set(FIELDS):
        unknown = f" (not {', '.join(sorted(set(value) - set(FIELDS)))})" if isinstance(value, dict) else ""
        raise HarnessError(f"{where}: [columns] maps {', '.join(FIELDS)} to the files' columns{unknown}")
    if not all(isinstance(v, str) and v for v in value.values()):
        raise HarnessError(f"{where}: [columns] values must be column names")
    return {f: value.get(f, f) for f in FIELDS if f != "condition"} | (
        {"condition": value["condition"]} if "condition" in value else {}
    )


def load_file(description: Description, split: str, source: Source, cache: object) -> Dataset:
    """One split of a user's dataset file, with its train split (if it has one) as the few-shot pool."""
    file = description.file
    assert file is not None  # the loader of descriptions read by read_dataset_file only
    splits = dict(file.splits)
    hashes = {file.path.name: file.sha256}
    parsed: dict[str, tuple[Example, ...]] = {}
    for name in dict.fromkeys([split, *(["train"] if "train" in splits else [])]):
        data = read_bytes(splits[name], "split file")
        hashes[os.path.relpath(splits[name], file.path.parent)] = sha256(data)
        parsed[name] = read_split(description, splits[name], data)
    pool = parsed.get("train", ())
    return Dataset(file.name, split, parsed[split], pool, description.label_range, hashes, description.conditions)


def read_split(description: Description, path: Path, data: bytes) -> tuple[Example, ...]:
    """The rows of one split file as Examples: every mapped column present, sentences non-empty, labels on the
    dataset's scale. Ids are row positions (0-based), as for C-STS and STS-B."""
    assert description.file is not None
    columns = dict(description.file.columns)
    text = decode(data, str(path))
    rows = _jsonl(text, path) if path.suffix == ".jsonl" else _delimited(text, path, FORMATS[path.suffix] or ",")
    examples = []
    for i, (where, row) in enumerate(rows):
        missing = [f"{c!r} ({f})" for f, c in columns.items() if c not in row]
        if missing:
            raise HarnessError(
                f"{where}: no column {', '.join(missing)} (mapped in {description.file.path}); it has {', '.join(row)}"
            )
        s1, s2 = row[columns["sentence1"]], row[columns["sentence2"]]
        if not s1.strip() or not s2.strip():
            raise HarnessError(f"{where}: empty sentence")
        label = label_value(row[columns["label"]].strip(), where, description.label_range, hidden_ok=False)
        examples.append(Example(str(i), s1, s2, row[columns["condition"]] if "condition" in columns else "", label))
    if not examples:
        raise HarnessError(f"{path} has no rows (dataset file {description.file.path})")
    return tuple(examples)


def _delimited(text: str, path: Path, delimiter: str) -> Iterator[tuple[str, dict[str, str]]]:
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter)
    header = csv_header(reader, str(path))
    if not header:
        raise HarnessError(f"{path} is empty (expected a header row)")
    for i, row in enumerate(csv_rows(reader, str(path))):
        where = f"{path} row {i + 2}"
        check_fields(row, header, where, "an unquoted delimiter in a text?")  # type: ignore[arg-type]
        yield where, row


def _jsonl(text: str, path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    for n, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        where = f"{path} line {n}"
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            raise HarnessError(f"{where}: not a JSON object") from None
        if not isinstance(record, dict):
            raise HarnessError(f"{where}: not a JSON object")
        # Texts are strings; a label may be a JSON number. Anything else is not read (label_value refuses it).
        yield where, {k: v if isinstance(v, str) else json.dumps(v) for k, v in record.items()}
