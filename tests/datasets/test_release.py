"""The encrypted release: decrypted in memory, extracted all-or-nothing, wrong password is one clear error."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.datasets.release import SPLIT_FILES, decrypt_release, extract_release
from harness.types import HarnessError
from tests.conftest import SHARED_ARCHIVE, SHARED_PASSWORD, requires_shared


def test_decrypts_an_openssl_pbkdf2_archive(csts_archive: tuple[Path, Path], csts_dir: Path) -> None:
    archive, _ = csts_archive
    files = decrypt_release(archive, "synthetic-secret")
    assert set(files) == set(SPLIT_FILES)
    assert files["csts_train.csv"] == (csts_dir / "csts_train.csv").read_bytes()


def test_wrong_password_is_one_clear_error(csts_archive: tuple[Path, Path]) -> None:
    archive, _ = csts_archive
    with pytest.raises(HarnessError, match="wrong password"):
        decrypt_release(archive, "not-the-password")


def test_wrong_password_writes_nothing(csts_archive: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "out"
    with pytest.raises(HarnessError):
        extract_release(csts_archive[0], "nope", out)
    assert not out.exists() or list(out.iterdir()) == []


def test_extract_writes_the_three_splits(csts_archive: tuple[Path, Path], tmp_path: Path) -> None:
    written = extract_release(csts_archive[0], "synthetic-secret", tmp_path / "out")
    assert sorted(p.name for p in written) == sorted(SPLIT_FILES)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(SPLIT_FILES)


def test_extract_refuses_to_overwrite(csts_archive: tuple[Path, Path], tmp_path: Path) -> None:
    extract_release(csts_archive[0], "synthetic-secret", tmp_path / "out")
    with pytest.raises(HarnessError, match="already exists"):
        extract_release(csts_archive[0], "synthetic-secret", tmp_path / "out")


def test_not_an_archive_is_a_clear_error(tmp_path: Path) -> None:
    bogus = tmp_path / "csts.tar.enc"
    bogus.write_text("hello, this is not base64 !!!")
    with pytest.raises(HarnessError, match="not a base64 openssl archive"):
        decrypt_release(bogus, "x")


def test_missing_archive_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match="C-STS archive .* does not exist"):
        decrypt_release(tmp_path / "absent.tar.enc", "x")


@requires_shared
def test_shared_release_has_the_published_split_sizes() -> None:
    from harness.datasets.load import parse_csts_csv
    from harness.datasets.release import read_password

    files = decrypt_release(SHARED_ARCHIVE, read_password(SHARED_PASSWORD))
    sizes = {n: len(parse_csts_csv(b, n, n.split("_")[1][:-4], (1.0, 5.0))) for n, b in files.items()}
    assert sizes == {"csts_train.csv": 11342, "csts_validation.csv": 2834, "csts_test.csv": 4732}
