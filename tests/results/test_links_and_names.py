"""Symbolic links planted in the results folder are never followed; model names make distinct, readable folders.

Runs go through run_eval.py against tests/fake_server.py; "nothing sent" is checked on the server's own log.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.results.claims import claim
from harness.results.write import make_run_id, write_run
from harness.types import HarnessError
from tests.fake_server import FakeServer

WHEN = datetime(2026, 11, 22, 13, 45, 1, tzinfo=UTC)


def argv(results: Path, server: FakeServer, *extra: str) -> list[str]:
    return ["--model", "gpt-4o", "--base-url", server.openai_url, "--dataset", "stsb", "--limit", "6",
            "--results-dir", str(results), "--no-progress", *extra]  # fmt: skip


def one_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: "), err
    return err


def test_a_run_folder_that_is_a_link_is_refused_before_any_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results, outside = tmp_path / "res", tmp_path / "outside"
    results.mkdir()
    outside.mkdir()  # empty: the old code took it for a stale claim and failed renaming onto it, answers paid
    (results / "r1").symlink_to(outside)
    with FakeServer() as server:
        assert main(argv(results, server, "--run-id", "r1")) == 2
    assert "r1 is a symbolic link" in one_error(capsys)
    assert server.calls == []
    assert list(outside.iterdir()) == [] and (results / "r1").is_symlink()


def test_a_link_at_an_automatic_run_folder_name_is_refused(tmp_path: Path) -> None:
    (tmp_path / "outside").mkdir()
    (tmp_path / "name").symlink_to(tmp_path / "outside")
    with pytest.raises(HarnessError, match="name is a symbolic link"):
        claim(tmp_path, "name", explicit=False)
    assert list((tmp_path / "outside").iterdir()) == []


def test_a_dangling_link_at_the_lock_path_creates_nothing_outside(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results, target = tmp_path / "res", tmp_path / "outside-file"
    results.mkdir()
    (results / ".r2.lock").symlink_to(target)
    with FakeServer() as server:
        assert main(argv(results, server, "--run-id", "r2")) == 2
    assert ".r2.lock is a symbolic link" in one_error(capsys)
    assert server.calls == []
    assert not target.exists() and not os.path.lexists(results / "r2")


def test_an_empty_model_name_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeServer() as server:
        args = argv(tmp_path / "res", server)
        args[1] = ""
        assert main(args) == 2
    assert "--model is empty" in one_error(capsys)
    assert server.calls == [] and not (tmp_path / "res").exists()


def test_model_names_keep_their_letters_and_never_share_a_folder() -> None:
    ids = {m: make_run_id("csts", "validation", m, 4, "long", WHEN) for m in ("a/b", "a_b", "a:b", "模型", "modèle")}
    assert ids["a_b"] == "csts-validation-a_b-k4-long-20261122-134501"  # nothing replaced: no hash
    assert ids["a/b"].startswith("csts-validation-a_b-k4-long-") and ids["a/b"] != ids["a_b"]
    assert len(set(ids.values())) == len(ids)
    assert ids["模型"] == "csts-validation-模型-k4-long-20261122-134501"
    assert ids["modèle"] == "csts-validation-modèle-k4-long-20261122-134501"


def test_a_very_long_model_name_is_cut_with_a_hash_and_its_folder_can_be_written(tmp_path: Path) -> None:
    long_a, long_b = "m" * 300, "m" * 299 + "n"
    a = make_run_id("csts", "validation", long_a, 0, "none", WHEN)
    b = make_run_id("csts", "validation", long_b, 0, "none", WHEN)
    assert a != b and a.startswith("csts-validation-mmm")
    assert len(a.encode()) <= 160 + 16  # results/write.py MAX_NAME_BYTES, and the timestamp
    run_dir = write_run(tmp_path, a, {"model": long_a}, [], {"n": 0}).run_dir  # the lock and staging names fit too
    assert run_dir.is_dir()


def test_a_too_long_run_id_is_refused_naming_the_run_id(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeServer() as server:
        assert main(argv(tmp_path, server, "--run-id", "x" * 300)) == 2
    err = one_error(capsys)
    assert "--run-id is 300 bytes long" in err and "results-dir" not in err
    assert server.calls == []
