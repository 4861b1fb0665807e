"""Read the official encrypted C-STS release (`openssl enc -aes-256-cbc -a -salt -pbkdf2`) in Python."""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import os
import shutil
import tarfile
import tempfile
from pathlib import Path

from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from harness.inputs import read_bytes, read_text
from harness.types import HarnessError

SPLIT_FILES = ("csts_train.csv", "csts_validation.csv", "csts_test.csv")
OBTAIN_HINT = (
    "request the C-STS archive (csts.tar.enc) and its password from the dataset authors "
    "(https://github.com/princeton-nlp/c-sts), then pass --archive FILE --password-file FILE, "
    "or extract it once with `python run_eval.py extract --archive FILE --password-file FILE --out DIR` "
    "and pass --data-dir DIR (or set CSTS_DATA_DIR)"
)
_PBKDF2_ITERATIONS = 10_000  # openssl's default for -pbkdf2


def read_password(path: Path) -> str:
    """The first line of the password file, without its newline."""
    text = read_text(Path(path), "password file")
    return text.splitlines()[0] if text else ""


def find_password(password_file: Path | None) -> tuple[str, str] | None:
    """(the password, where it came from: `--password-file FILE` or `CSTS_PASSWORD`), the file first; None when
    neither was given. An empty one is refused naming its source, never blamed on an option not given."""
    if password_file is not None:
        password, source = read_password(password_file), f"--password-file {password_file}"
    elif (env := os.environ.get("CSTS_PASSWORD")) is not None:
        password, source = env, "CSTS_PASSWORD"
    else:
        return None
    if not password:
        raise HarnessError(f"{source} is empty: it should hold the C-STS archive's password")
    return password, source


def decrypt_release(archive: Path, password: str, source: str = "--password-file") -> dict[str, bytes]:
    """Decrypt the archive in memory and return {file name: bytes} of the three split CSVs. `source`: where the
    password came from, named when it is wrong."""
    blob = read_bytes(Path(archive), "C-STS archive")
    try:
        raw = base64.b64decode(b"".join(blob.split()), validate=True)
    except binascii.Error:
        raise HarnessError(f"{archive} is not a base64 openssl archive (expected csts.tar.enc)") from None
    if raw[:8] != b"Salted__" or len(raw) < 32 or (len(raw) - 16) % 16:
        raise HarnessError(f"{archive} is not an `openssl enc -salt` archive (expected csts.tar.enc)")
    key_iv = hashlib.pbkdf2_hmac("sha256", password.encode(), raw[8:16], _PBKDF2_ITERATIONS, 48)
    decryptor = Cipher(algorithms.AES(key_iv[:32]), modes.CBC(key_iv[32:])).decryptor()
    padded = decryptor.update(raw[16:]) + decryptor.finalize()
    wrong = HarnessError(f"wrong password for {archive}: decryption failed (check {source})")
    try:
        unpadder = padding.PKCS7(128).unpadder()
        plain = unpadder.update(padded) + unpadder.finalize()
        # A wrong key passes the padding check about once in 256 tries; the tar check catches those.
        with tarfile.open(fileobj=io.BytesIO(plain), mode="r:") as tar:
            files = {}
            for member in tar.getmembers():
                name = os.path.basename(member.name)
                if member.isfile() and name in SPLIT_FILES:
                    handle = tar.extractfile(member)
                    assert handle is not None
                    files[name] = handle.read()
    except (ValueError, tarfile.TarError):
        raise wrong from None
    missing = [f for f in SPLIT_FILES if f not in files]
    if missing:
        raise HarnessError(f"{archive} decrypted but lacks {', '.join(missing)}")
    return files


def extract_release(archive: Path, password: str, out_dir: Path, source: str = "--password-file") -> list[Path]:
    """Write the split CSVs into out_dir, all or nothing (staged in a temp dir, then moved)."""
    files = decrypt_release(archive, password, source)
    out_dir = Path(out_dir)
    clashes = [out_dir / n for n in files if (out_dir / n).exists()]
    if clashes:
        raise HarnessError(f"{clashes[0]} already exists; remove it or choose another --out")
    out_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".csts-extract-", dir=out_dir))
    try:
        for name, data in files.items():
            (staging / name).write_bytes(data)
        written = []
        for name in files:
            os.replace(staging / name, out_dir / name)
            written.append(out_dir / name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return written
