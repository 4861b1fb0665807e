"""Run folders carry manifest.json; a folder altered after it was written reads back as altered, one written before
manifests as unverified. Real run folders: the offline `overlap` model on bundled STS-B."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.results.manifest import (
    ALTERED,
    UNVERIFIED,
    VERIFIED,
    Integrity,
    check_folder,
    read_run_file,
    read_run_json,
    write_manifest,
)
from harness.results.read import finished_runs, load_run
from tests.synthetic_runs import overlap_run


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return overlap_run(tmp_path_factory.mktemp("results"))


def copy(written: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(written, tmp_path / "r"))


def test_the_manifest_holds_each_files_size_digest_and_the_line_count(written: Path) -> None:
    manifest = json.loads((written / "manifest.json").read_text())
    data = (written / "samples.jsonl").read_bytes()
    assert manifest["files"]["samples.jsonl"] == {
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),  # hashlib here, sha256sum would print the same
        "lines": 200,
    }
    assert sorted(manifest["files"]) == ["config.json", "metrics.json", "samples.jsonl"]
    run = load_run(written)
    assert (run.integrity.status, run.integrity.samples_sha256) == (VERIFIED, hashlib.sha256(data).hexdigest())


def _lines(p: Path) -> list[str]:
    return (p / "samples.jsonl").read_text().splitlines(keepends=True)


def _edit_prediction(p: Path) -> None:
    lines = _lines(p)
    record = json.loads(lines[5])
    record["prediction"] = 5.0 if record["prediction"] != 5.0 else 0.0
    lines[5] = json.dumps(record, ensure_ascii=False) + "\n"
    (p / "samples.jsonl").write_text("".join(lines))


ALTERATIONS: dict[str, tuple[Callable[[Path], None], str]] = {
    "deleted line": (
        lambda p: (p / "samples.jsonl").write_text("".join(_lines(p)[:10] + _lines(p)[11:])),
        "samples.jsonl changed since it was written (199 lines, 200 written)",
    ),
    "edited prediction": (_edit_prediction, "samples.jsonl changed since it was written (same line count)"),
    "empty file": (
        lambda p: (p / "samples.jsonl").write_text(""),
        "samples.jsonl changed since it was written (0 lines, 200 written)",
    ),
    "cut at a line boundary": (
        lambda p: (p / "samples.jsonl").write_text("".join(_lines(p)[:120])),
        "samples.jsonl changed since it was written (120 lines, 200 written)",
    ),
    "edited metrics.json": (
        lambda p: (p / "metrics.json").write_text((p / "metrics.json").read_text().replace("47.9", "57.9")),
        "metrics.json changed since it was written",
    ),
    "deleted metrics.json": (
        lambda p: (p / "metrics.json").unlink(),
        "metrics.json is missing or unreadable",
    ),
}


@pytest.mark.parametrize("name", ALTERATIONS)
def test_an_altered_folder_reads_back_as_altered_and_is_not_reused(name: str, written: Path, tmp_path: Path) -> None:
    run_dir = copy(written, tmp_path)
    alter, why = ALTERATIONS[name]
    alter(run_dir)
    run = load_run(run_dir)
    assert (run.integrity.status, run.integrity.why) == (ALTERED, why)
    assert finished_runs(tmp_path) == {}  # a sweep runs the setting again rather than reuse it


def test_an_intact_folder_is_reused(written: Path, tmp_path: Path) -> None:
    run_dir = copy(written, tmp_path)
    config_hash = json.loads((run_dir / "config.json").read_text())["config_hash"]
    assert finished_runs(tmp_path) == {config_hash: run_dir}


def test_a_folder_of_an_older_version_is_unverified_unless_its_line_count_is_wrong(
    written: Path, tmp_path: Path
) -> None:
    run_dir = copy(written, tmp_path)
    (run_dir / "manifest.json").unlink()
    assert load_run(run_dir).integrity.status == UNVERIFIED
    (run_dir / "samples.jsonl").write_text("".join(_lines(run_dir)[:199]))
    run = load_run(run_dir)
    assert (run.integrity.status, run.integrity.why) == (ALTERED, "samples.jsonl holds 199 lines for 200 queries")


@pytest.mark.parametrize("text", ["{not json", '{"files": []}', '{"files": {"samples.jsonl": "x"}}', "[]"])
def test_a_broken_manifest_reads_as_altered_not_as_a_crash(text: str, written: Path, tmp_path: Path) -> None:
    run_dir = copy(written, tmp_path)
    (run_dir / "manifest.json").write_text(text)
    run = load_run(run_dir)
    assert (run.integrity.status, run.integrity.why) == (ALTERED, "manifest.json is unreadable")


# --- the manifest's pieces on small folders: written, read, and a derived folder's check (check_folder) ------------


def _folder(tmp_path: Path, files: dict[str, str]) -> Path:
    folder = tmp_path / "errors-out"
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


def test_a_manifest_describes_the_files_only_and_reads_as_written(tmp_path: Path) -> None:
    folder = _folder(tmp_path, {"a.json": "{}\n", "b.jsonl": "1\n2\n", "manifest.json": "old"})
    (folder / "plots").mkdir()  # a folder inside is no file of the manifest
    write_manifest(folder)
    text = (folder / "manifest.json").read_text()
    written = json.loads(text)
    assert written == {
        "format": 1,
        "files": {
            "a.json": {"bytes": 3, "sha256": hashlib.sha256(b"{}\n").hexdigest()},
            "b.jsonl": {"bytes": 4, "sha256": hashlib.sha256(b"1\n2\n").hexdigest(), "lines": 2},
        },
    }
    assert text == json.dumps(written, indent=2) + "\n"  # two-space indent, one record a line, a final newline
    assert check_folder(folder) == Integrity(VERIFIED, "")


@pytest.mark.parametrize("name", ["", ".", "..", "../x", "/dev/zero", "a\\b", "a\0b"])
def test_a_run_file_is_only_a_plain_name_inside_the_folder(name: str, tmp_path: Path) -> None:
    with pytest.raises(OSError) as raised:
        read_run_file(_folder(tmp_path, {"x": "1"}), name)
    assert raised.value.errno == errno.EINVAL and f"{name!r} is not a file name inside" in str(raised.value)


def test_a_fifo_in_a_run_folder_is_refused_not_waited_on(tmp_path: Path) -> None:
    folder = _folder(tmp_path, {})
    os.mkfifo(folder / "samples.jsonl")
    with pytest.raises(OSError) as raised:
        read_run_file(folder, "samples.jsonl")
    assert raised.value.errno == errno.EINVAL and "samples.jsonl" in str(raised.value)
    assert read_run_json(_folder(tmp_path / "b", {"m.json": '{"a": [1]}'}), "m.json") == {"a": [1]}


def test_a_derived_folder_without_a_manifest_is_unverified(tmp_path: Path) -> None:
    folder = _folder(tmp_path, {"a.json": "{}"})
    assert check_folder(folder) == Integrity(UNVERIFIED, "errors-out has no manifest.json: not verified")


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (lambda f: (f / "a.json").write_text('{"x": 1}'), "errors-out/a.json changed since it was written"),
        (lambda f: (f / "b.jsonl").unlink(), "errors-out/b.jsonl is missing or unreadable"),
        (lambda f: (f / "manifest.json").write_text("{not json"), "errors-out/manifest.json is unreadable"),
        (lambda f: (f / "manifest.json").write_text('{"files": []}'), "errors-out/manifest.json is unreadable"),
        (
            lambda f: (f / "manifest.json").write_text('{"files": {"a.json": 3}}'),
            "errors-out/manifest.json is unreadable",
        ),
        (lambda f: (f / "manifest.json").write_text("[]"), "errors-out/manifest.json is unreadable"),
    ],
)
def test_a_derived_folder_altered_since_it_was_written_says_which_file(
    change: Callable[[Path], object], why: str, tmp_path: Path
) -> None:
    folder = _folder(tmp_path, {"a.json": "{}", "b.jsonl": "1\n"})
    write_manifest(folder)
    (folder / "added-later.txt").write_text("not its concern")
    assert check_folder(folder) == Integrity(VERIFIED, "")
    change(folder)
    assert check_folder(folder) == Integrity(ALTERED, why)


def test_a_run_folders_manifest_record_that_is_no_object_is_unreadable(written: Path, tmp_path: Path) -> None:
    run_dir = copy(written, tmp_path)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    manifest["files"]["metrics.json"] = "x"  # samples.jsonl's record intact: only the other one is no object
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    assert load_run(run_dir).integrity.why == "manifest.json is unreadable"
