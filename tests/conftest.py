"""Shared fixtures: synthetic C-STS data (never the real plaintext) and the optional ../shared folder."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import os
import random
import tarfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

# What the caller chose, before pytest_configure sets it for a worker (tests/test_conftest.py).
CALLER_THREADS = os.environ.get("OMP_NUM_THREADS")
ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("CSTS_SHARED_DIR", ROOT.parent / "shared"))
SHARED_ARCHIVE = SHARED / "data" / "csts" / "csts.tar.enc"
SHARED_PASSWORD = SHARED / "data" / "csts" / "PASSWORD"

requires_shared = pytest.mark.skipif(
    not SHARED_ARCHIVE.is_file(), reason=f"needs the shared C-STS archive at {SHARED_ARCHIVE} (not in a plain clone)"
)

_SUBJECTS = ["a red fox", "two tall men", "an old bus", "a small girl", "three dogs", "a chef", "a green kite"]
_ACTIONS = ["runs past", "stands near", "waits by", "jumps over", "paints", "carries", "looks at"]
_OBJECTS = ["the river", "a wooden fence", "the blue door", "a market stall", "the hill", "a parked car"]
_CONDITIONS = ["The color of the object.", "The number of people.", "The action.", "The location.", "The animal."]


def synthetic_rows(n_pairs: int, seed: int, hidden: bool = False) -> list[dict[str, str]]:
    """Made-up sentence pairs, two conditions each (higher label first), like the C-STS layout."""
    rng = random.Random(seed)
    rows = []
    for i in range(n_pairs):
        s1 = f"{rng.choice(_SUBJECTS)} {rng.choice(_ACTIONS)} {rng.choice(_OBJECTS)} number {seed}-{i}."
        s2 = f"{rng.choice(_SUBJECTS)} {rng.choice(_ACTIONS)} {rng.choice(_OBJECTS)} item {seed}-{i}."
        c1, c2 = rng.sample(_CONDITIONS, 2)
        hi = rng.randint(2, 5)
        lo = rng.randint(1, hi)
        for cond, label in ((c1, hi), (c2, lo)):
            rows.append({"sentence1": s1, "sentence2": s2, "condition": cond, "label": "-1" if hidden else str(label)})
    return rows


def csv_bytes(
    rows: list[dict[str, str]], columns: tuple[str, ...] = ("sentence1", "sentence2", "condition", "label")
) -> bytes:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(columns), extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue().encode()


def write_synthetic_csts(directory: Path, n_train: int = 40, n_val: int = 12, n_test: int = 10) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "csts_train.csv").write_bytes(csv_bytes(synthetic_rows(n_train, 1)))
    (directory / "csts_validation.csv").write_bytes(csv_bytes(synthetic_rows(n_val, 2)))
    (directory / "csts_test.csv").write_bytes(csv_bytes(synthetic_rows(n_test, 3, hidden=True)))
    return directory


def openssl_encrypt(plain: bytes, password: str, salt: bytes = b"12345678") -> bytes:
    """What `openssl enc -aes-256-cbc -a -salt -pbkdf2` writes, made here to test our decryption."""
    key_iv = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, 10_000, 48)
    padder = padding.PKCS7(128).padder()
    padded = padder.update(plain) + padder.finalize()
    enc = Cipher(algorithms.AES(key_iv[:32]), modes.CBC(key_iv[32:])).encryptor()
    raw = b"Salted__" + salt + enc.update(padded) + enc.finalize()
    b64 = base64.b64encode(raw)
    return b"\n".join(b64[i : i + 64] for i in range(0, len(b64), 64)) + b"\n"


def make_archive(csv_dir: Path, out: Path, password: str) -> Path:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for f in sorted(csv_dir.glob("csts_*.csv")):
            tar.add(f, arcname=f.name)
    out.write_bytes(openssl_encrypt(buf.getvalue(), password))
    return out


@pytest.fixture
def csts_dir(tmp_path: Path) -> Path:
    """A directory of synthetic csts_{train,validation,test}.csv."""
    return write_synthetic_csts(tmp_path / "csts")


@pytest.fixture
def csts_archive(tmp_path: Path, csts_dir: Path) -> tuple[Path, Path]:
    """(archive, password file) of the synthetic data in the official release format."""
    pw = tmp_path / "PASSWORD"
    pw.write_text("synthetic-secret\n")
    return make_archive(csts_dir, tmp_path / "csts.tar.enc", "synthetic-secret"), pw


def pytest_configure(config: pytest.Config) -> None:
    """Under `-n`, each worker's torch (and every server or CLI it starts, which inherit the environment) computes on
    its share of the cores (`worker_threads`). Four workers on two cores each running torch on two threads stall one
    another at every parallel region: a test's eight in-process SmolLM2 answers outran the 600 s timeout in CI
    (docs/testing.md)."""
    threads = worker_threads(os.environ, _cores())
    if threads is not None:  # torch reads it at its import, after this (tests/test_conftest.py checks it did)
        os.environ["OMP_NUM_THREADS"] = str(threads)


def worker_threads(environ: Mapping[str, str], cores: int) -> int | None:
    """cores // workers (at least 1) for a pytest-xdist worker (PYTEST_XDIST_WORKER_COUNT, set by xdist before
    conftest loads); None when not under `-n` or when the caller chose OMP_NUM_THREADS."""
    workers = int(environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers < 2 or "OMP_NUM_THREADS" in environ:
        return None
    return max(1, cores // workers)


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: unknown (and not called) without it
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: two workers a core, at most 16. Most tests wait (on local servers, subprocesses, timers) rather
    than compute, so a core serves two of them (issue 33: the suite is ≤ 5 minutes on two cores)."""
    return min(16, 2 * _cores())


class Polls(list[float]):
    """The pauses of `server_polls`; `then`, if set, runs once, after the first (a server starting only then)."""

    then: Callable[[], object] | None = None


@pytest.fixture
def server_polls(monkeypatch: pytest.MonkeyPatch) -> Polls:
    """Each try at a server that has not answered yet and is waited for (harness/calling/attempts.py Reachability):
    the pause asked for before the next try, in seconds. Tests of --wait-for-server check these counts and pauses
    instead of the wall-clock time a run took, which a busy machine stretches (issue 33)."""
    from harness.calling.attempts import Reachability

    polls = Polls()
    unreachable = Reachability.unreachable

    def recorded(self: Reachability, e: Any) -> None:
        unreachable(self, e)  # past --wait-for-server it raises: the try that stops the run is not a poll
        polls.append(e.retry_after)
        then, polls.then = polls.then, None
        if then is not None:
            then()

    monkeypatch.setattr(Reachability, "unreachable", recorded)
    return polls
