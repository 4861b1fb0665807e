"""The single-field checks a setting's declaration names (`option(..., check=at_least(1))`), and the converter of
--shard. Each check is (value, flag) -> None and raises one HarnessError line naming the flag; None always passes
(an option not given). Checks of several fields together are harness/config/validate.py's."""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from harness.config.option import Check
from harness.inputs import check_regular
from harness.types import HarnessError

# --run-id: a folder name holds 255 bytes; ".ID.staging-PID-XXXXXXXX" beside it needs ~35 more (results/claims.py).
MAX_RUN_ID_BYTES = 200


def at_least(low: int) -> Check:
    """A count: low or more."""

    def check(value: Any, flag: str) -> None:
        if value is not None and value < low:
            raise HarnessError(f"{flag} must be {'at least ' + str(low) if low else '0 or more'}, got {value}")

    return check


# The largest budget, timeout, rate or size any setting takes: nothing means more, and a float past it (1e308) turns
# into an integer no one can use (--max-reply-mb 1e308 ended in an OverflowError, issue 41).
MAX_NUMBER = 1e12


def finite(positive: bool = False) -> Check:
    """A budget, a timeout, a rate or a size: nan and inf parse as floats, and neither is one; nor is 1e308."""

    def check(value: Any, flag: str) -> None:
        if value is not None and (not math.isfinite(value) or value < 0 or (positive and value == 0)):
            want = "a positive number" if positive else "a number 0 or more"
            raise HarnessError(f"{flag} must be {want}, got {value}")
        if value is not None and value > MAX_NUMBER:
            raise HarnessError(f"{flag} must be at most {MAX_NUMBER:g}, got {value:g}")

    return check


def share(value: Any, flag: str) -> None:
    """A share of something, in (0, 1]."""
    if not (math.isfinite(value) and 0 < value <= 1):
        raise HarnessError(f"{flag} must be a share in (0, 1], got {value}")


def a_model(value: Any, flag: str) -> None:
    if not value.strip():
        raise HarnessError(f"{flag} is empty: name the model to evaluate")


def check_run_id(run_id: str | None, flag: str = "--run-id") -> None:
    """A run id names one folder inside --results-dir: no separators, no '.', '..' or hidden names."""
    if run_id is None:
        return
    seps = {"/", "\\", os.sep, os.altsep or "/", "\0"}
    if not run_id.strip() or run_id.startswith(".") or any(c in run_id for c in seps):
        raise HarnessError(
            f"{flag} {run_id!r} must be a plain folder name (no '/' or '\\', not empty, not starting with '.')"
        )
    if len(run_id.encode("utf-8", "surrogatepass")) > MAX_RUN_ID_BYTES:
        raise HarnessError(
            f"{flag} is {len(run_id.encode('utf-8', 'surrogatepass'))} bytes long: at most {MAX_RUN_ID_BYTES} "
            "(a folder name holds 255 bytes, and the lock and staging names beside it need the rest)"
        )


def non_empty(values: Any, flag: str) -> None:
    if any(not s for s in values):
        raise HarnessError(f"{flag} needs a non-empty string")


def http_urls(urls: Any, flag: str) -> None:
    for url in urls:  # the SDKs refuse it only at the first request, after their retries
        if urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).netloc:
            shown = url.partition("?")[0] + ("?…" if "?" in url else "")  # a query may hold a credential
            raise HarnessError(f"{flag} {shown!r} needs http:// or https:// in front (e.g. http://{shown})")
        parts = urlsplit(url)
        if "@" in parts.netloc:  # the HTTP client sends one Authorization header, the key's: a user:password@ in
            # the address could not be sent beside it, and every request would fail (a batch after minutes of retries)
            raise HarnessError(
                f"{flag} {parts.scheme}://{parts.netloc.rpartition('@')[2]}{parts.path}: a user:password@ in the "
                "address cannot be sent beside the API key's Authorization header; give a gateway's credential in "
                "its query (?api-key=...) or as the API key"
            )
        url_query(url, flag)


def url_query(url: str, flag: str = "--base-url") -> dict[str, str]:
    """The parameters of a base URL's query (a gateway's `?api-key=`, Azure's `?api-version=`), decoded: sent with
    every request apart from the URL (the SDKs' `default_query`: they append an endpoint's path to the base URL as
    text, which would land after its query). Each must be `name=value` with a name of its own, as a dict holds them;
    the error names the part, never a value (it may be a credential)."""
    parts = urlsplit(url)
    where = f"{flag} {parts.scheme}://{parts.netloc.rpartition('@')[2]}{parts.path}"
    if parts.fragment or url.endswith("#"):
        raise HarnessError(f"{where}: a '#' ends the URL and is never sent; write it %23 inside a query value")
    try:
        pairs = parse_qsl(parts.query, keep_blank_values=True, strict_parsing=True) if parts.query else []
    except ValueError:
        raise HarnessError(f"{where}: its query is not name=value pairs joined by '&'") from None
    names = [name for name, _ in pairs]
    for name in names:
        if not name:
            raise HarnessError(f"{where}: its query has a value without a name ('=value')")
        if names.count(name) > 1:
            raise HarnessError(
                f"{where}: its query names {name!r} twice; its parameters go with each request, one value a name"
            )
    return dict(pairs)


def regular_file(what: str) -> Check:
    """A file the user named: present and regular (a FIFO would block, a directory is a mistake)."""

    def check(value: Any, flag: str) -> None:
        if value is not None:
            check_regular(Path(value), what)

    return check


MAX_SHARDS = 100_000  # parts of one run: far more than any job array holds (Slurm's MaxArraySize defaults to 1,001)


def shard(text: str) -> tuple[int, int]:
    """--shard's "K/N" with 1 <= K <= N <= MAX_SHARDS."""
    k, sep, n = text.partition("/")
    if not sep or not k.strip().isdigit() or not n.strip().isdigit() or not 1 <= int(k) <= int(n):
        raise argparse.ArgumentTypeError(f"{text!r} is not K/N with 1 <= K <= N (e.g. 2/4)")
    if int(n) > MAX_SHARDS:
        raise argparse.ArgumentTypeError(f"{text!r}: at most {MAX_SHARDS:,} parts (N)")
    return int(k), int(n)
