"""results/write.py: a run folder's files, written whole; samples.jsonl read back as written."""

from __future__ import annotations

import dataclasses
import json
import stat
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from harness.results.claims import claim
from harness.results.manifest import file_record
from harness.results.stage import umask
from harness.results.write import make_run_id, read_samples, sample_record, write_atomic, write_run
from harness.types import HarnessError, Scored

CONFIG = {"dataset": "stsb", "split": "validation", "model": "m", "shots": 0, "label_range": [0.0, 5.0]}


def scored(i: int, **kw: object) -> Scored:
    fields: dict = dict(id=str(i), prompt=f"p{i}", shot_ids=("7", "9"), output="3", parsed=3.0, valid=True,
                        prediction=3.0, label=float(i % 6))  # fmt: skip
    return Scored(**(fields | kw))


def test_run_id_is_readable_sortable_and_a_plain_folder_name() -> None:
    when = datetime(2026, 11, 22, 13, 45, 1, tzinfo=UTC)
    expected = "csts-validation-gpt-4-k4-long-20261122-134501"
    assert make_run_id("csts", "validation", "gpt-4", 4, "long", when) == expected
    assert (
        make_run_id("stsb", "validation", "org/m:v1", 0, "none", when)
        == "stsb-validation-org_m_v1-k0-none-b654dd0f-20261122-134501"  # characters replaced: a hash of the name
    )


def test_a_run_folder_holds_every_file_and_samples_read_back_as_written(tmp_path: Path) -> None:
    samples = [scored(0), scored(1, output=None, parsed=None, valid=False, prediction=None, error="timeout")]
    run_dir, records = write_run(tmp_path, "r1", CONFIG, samples, {"n": 2}, {"0": 3.0}, {"answers.jsonl": "{}\n"})
    assert list(records) == [sample_record(s) for s in samples]  # what samples.jsonl holds, returned
    assert run_dir == tmp_path / "r1"
    assert sorted(p.name for p in run_dir.iterdir()) == [
        "answers.jsonl", "config.json", "manifest.json", "metrics.json", "samples.jsonl", "test_predictions.json"
    ]  # fmt: skip
    assert json.loads((run_dir / "config.json").read_text()) == CONFIG
    assert json.loads((run_dir / "metrics.json").read_text()) == {"n": 2}
    assert read_samples(run_dir) == [sample_record(s) for s in samples]
    assert read_samples(run_dir)[0]["shot_ids"] == ["7", "9"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r1"]  # nothing hidden left behind


def test_samples_jsonl_lines_are_json_dumps_of_the_records_in_field_order(tmp_path: Path) -> None:
    """write_run copies the instance dict (sample_record): json.dumps's bytes, keys in Scored's field order (the
    layout of every samples.jsonl)."""
    samples = [
        scored(0, prompt='é \u2028 " \\ \n</script>', usage={"input_tokens": 3, "output_tokens": 1}),
        scored(1, output=None, parsed=float("nan"), valid=False, prediction=None, error="timeout"),
        scored(2, expected=2.5, expected_mass=0.9, label=None, reasoning="2 or 3? <think>"),
    ]
    run_dir = write_run(tmp_path, "r1", CONFIG, samples, None).run_dir
    lines = (run_dir / "samples.jsonl").read_text(encoding="utf-8").split("\n")[:-1]  # not splitlines: U+2028
    # Strict JSON: the NaN is written as null, and the line names the field (harness/results/strict.py).
    nan_free = sample_record(samples[1]) | {"parsed": None, "non_finite": ["parsed"]}
    want = [sample_record(samples[0]), nan_free, sample_record(samples[2])]
    assert lines == [json.dumps(r, ensure_ascii=False) for r in want]
    fields = [f.name for f in dataclasses.fields(Scored)]
    optional = (
        "expected",
        "expected_mass",
        "reasoning",
        "expected_dropped",
        "repeats",
    )  # only where the sample has them
    assert list(sample_record(samples[0])) == [f for f in fields if f not in optional]
    assert list(sample_record(samples[2])) == [f for f in fields if f not in ("expected_dropped", "repeats")]


def test_expected_fields_are_written_only_by_expected_scoring(tmp_path: Path) -> None:
    assert "expected" not in sample_record(scored(0))
    assert sample_record(scored(0, expected=2.5, expected_mass=0.9))["expected"] == 2.5


def test_samples_failing_mid_write_leave_no_folder(tmp_path: Path) -> None:
    def samples() -> Iterator[Scored]:
        yield scored(0)
        raise RuntimeError("scoring broke after one sample")

    with pytest.raises(RuntimeError, match="after one sample"):
        write_run(tmp_path, "r1", CONFIG, samples(), {"n": 1})
    assert list(tmp_path.iterdir()) == []
    write_run(tmp_path, "r1", CONFIG, [scored(0)], {"n": 1})  # the name was released
    assert len(read_samples(tmp_path / "r1")) == 1


def test_an_explicit_run_id_is_never_overwritten(tmp_path: Path) -> None:
    write_run(tmp_path, "same", CONFIG, [scored(0)], None)
    with pytest.raises(HarnessError, match="already exists"):
        write_run(tmp_path, "same", CONFIG, [scored(1)], None)
    assert read_samples(tmp_path / "same")[0]["id"] == "0"
    assert not (tmp_path / "same" / "metrics.json").exists()  # metrics None: a dry run writes none


def test_write_atomic_replaces_whole_files_with_the_users_mode(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "report.json"
    write_atomic(path, "one\n")
    write_atomic(path, "two\n")
    assert path.read_text() == "two\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask()
    assert [p.name for p in path.parent.iterdir()] == ["report.json"]


def test_a_reply_utf8_cannot_hold_is_written_as_its_json_escape_and_reads_back_exactly(tmp_path: Path) -> None:
    """A lone surrogate (a server's JSON-escaped "\\ud800") in a reply, an error and metrics: the files are UTF-8,
    every line is JSON, and reading gives back the very text (a literal backslash stays a backslash)."""
    odd = "3.0 \ud800 and \udfff, NUL \x00, bell \x07, and the six characters \\ud800"
    samples = [scored(0, output=odd), scored(1, output=None, valid=False, prediction=None, error=f"HTTP 500: {odd}")]
    written = write_run(tmp_path, "r1", CONFIG, samples, {"first_errors": [odd]}, None, {"answers.jsonl": f"{odd}\n"})
    run_dir = written.run_dir
    for name in ("samples.jsonl", "metrics.json", "answers.jsonl"):
        (run_dir / name).read_bytes().decode("utf-8")  # strict: no surrogate reached the file
    assert read_samples(run_dir) == [sample_record(s) for s in samples]
    assert read_samples(run_dir)[0]["output"] == odd
    # samples.jsonl's manifest record is the one its bytes on disk give (size, sha256, lines).
    manifest = json.loads((run_dir / "manifest.json").read_text())["files"]
    assert manifest["samples.jsonl"] == file_record((run_dir / "samples.jsonl").read_bytes(), "samples.jsonl")
    assert json.loads((run_dir / "metrics.json").read_text()) == {"first_errors": [odd]}
    write_atomic(tmp_path / "x.json", json.dumps([odd], ensure_ascii=False))
    assert json.loads((tmp_path / "x.json").read_text()) == [odd]


def test_a_full_disk_is_one_error_naming_the_folder_and_leaves_nothing(tmp_path: Path) -> None:
    from tests.small_disk import small_disk

    with small_disk(tmp_path / "disk", "256k") as disk:
        results = disk.path / "results"
        results.mkdir()
        claimed = claim(results, "r1", explicit=True)  # before the run: the disk still had room
        disk.fill(leave=8192)
        many = [scored(i, output="3.0 " + "x" * 400) for i in range(2000)]  # ~1 MB of samples
        with pytest.raises(HarnessError) as caught:
            write_run(results, "r1", CONFIG, many, {"n": 2000}, claimed=claimed)
        message = str(caught.value)
        assert f"the disk holding {results} is full (No space left on device)" in message
        assert f"{results / 'r1'} was not written" in message and "\n" not in message
        assert sorted(p.name for p in results.iterdir()) == []  # no staging, no claimed folder, no lock
        with pytest.raises(HarnessError, match=r"is full \(No space left on device\): .*report.json was not written"):
            write_atomic(results / "report.json", "x" * 100_000)
        assert sorted(p.name for p in results.iterdir()) == []
        disk.free()
        write_run(results, "r1", CONFIG, many[:5], {"n": 5})  # the name was released: a rerun writes it
        assert len(read_samples(results / "r1")) == 5
