"""Reading one dataset file's rows: labels on a scale, CSV headers and rows, field counts, UTF-8. Each failure is one
line naming the file and the row (the shipped loaders, harness/datasets/load.py, and a user's dataset files,
harness/datasets/files.py)."""

from __future__ import annotations

import csv
import hashlib
import math
from collections.abc import Iterator

from harness.types import HarnessError


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def label_value(value: str, where: str, label_range: tuple[float, float], *, hidden_ok: bool) -> float | None:
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


def csv_error(e: csv.Error, reader: csv.DictReader[str], source: str) -> HarnessError:
    # The csv module's one common failure on real files is its field size limit (131,072 characters),
    # which in practice means an unclosed quote swallowed the rest of the file into one cell.
    hint = " (an unclosed quote?)" if "field larger than field limit" in str(e) else ""
    # line_num is still 0 when the header itself fails: the quote opened on line 1.
    return HarnessError(f"{source} line {reader.line_num or 1}: {e}{hint}")


def csv_header(reader: csv.DictReader[str], source: str) -> list[str]:
    try:
        return list(reader.fieldnames or [])
    except csv.Error as e:
        raise csv_error(e, reader, source) from None


def csv_rows(reader: csv.DictReader[str], source: str) -> Iterator[dict[str, str]]:
    """The reader's rows; a csv error becomes one line naming the file and line."""
    try:
        yield from reader
    except csv.Error as e:
        raise csv_error(e, reader, source) from None


def check_fields(row: dict[str | None, object], header: list[str], where: str, why: str) -> None:
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


def decode(data: bytes, source: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise HarnessError(f"{source} is not UTF-8 text") from None
