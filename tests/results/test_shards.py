"""--shard K/N and `report` merging the parts (harness/results/shards.py), with the offline overlap baseline on the
bundled STS-B validation split: fast, no model, the same numbers on every machine."""

from __future__ import annotations

import csv
import dataclasses
import json
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from scipy.stats import pearsonr, spearmanr

from harness.cli.main import main
from harness.results.read import load_run
from harness.results.shards import merge_shards
from harness.types import HarnessError

RUN = ["--model", "overlap", "--dataset", "stsb", "--limit", "31", "--shots", "2", "--no-progress"]
# report columns that name the folder, not the numbers
FOLDER_COLUMNS = {"run", "run_dir"}


def run(results: Path, *extra: str) -> Path:
    before = set(results.iterdir()) if results.is_dir() else set()
    assert main([*RUN, "--results-dir", str(results), *extra]) == 0
    (made,) = set(results.iterdir()) - before
    return made


def report(out: Path, *folders: Path) -> list[dict[str, str]]:
    assert main(["report", *map(str, folders), "--out", str(out)]) == 0
    with (out / "runs.csv").open(encoding="utf-8") as f:
        return [{k: v for k, v in row.items() if k not in FOLDER_COLUMNS} for row in csv.DictReader(f)]


def samples(folder: Path) -> list[dict]:
    return [json.loads(x) for x in (folder / "samples.jsonl").read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """One whole run and its three parts, the shots drawn from the published script's one stream (`reference`):
    a draw that depends on the order of the queries, so a part that drew its own would differ."""
    results = tmp_path_factory.mktemp("shards") / "results"
    whole = run(results, "--shot-sampler", "reference")
    parts = [run(results, "--shot-sampler", "reference", "--shard", f"{k}/3") for k in (1, 2, 3)]
    return whole, parts


def test_each_part_holds_every_third_query_with_the_whole_runs_prompt(runs: tuple[Path, list[Path]]) -> None:
    whole, parts = runs
    everything = samples(whole)
    for k, part in enumerate(parts, start=1):
        assert [(s["id"], s["prompt"], s["shot_ids"]) for s in samples(part)] == [
            (s["id"], s["prompt"], s["shot_ids"]) for s in everything[k - 1 :: 3]
        ]
        shard = json.loads((part / "config.json").read_text())["shard"]
        assert (shard["part"], shard["of"], shard["whole_queries"]) == (k, 3, 31)
        assert shard["whole_hash"] == json.loads((whole / "config.json").read_text())["config_hash"]
    assert "part2of3" in parts[1].name


def test_report_merges_the_parts_into_the_whole_runs_numbers(
    runs: tuple[Path, list[Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    whole, parts = runs
    (one,) = report(tmp_path / "whole", whole)
    (merged,) = report(tmp_path / "parts", *reversed(parts))  # in any order
    assert merged == one  # every number: n, invalid, Spearman, Pearson, CIs, fallback spread, ...
    pred = [s["prediction"] for s in samples(whole)]
    gold = [s["label"] for s in samples(whole)]
    assert float(merged["spearman"]) == pytest.approx(100 * spearmanr(pred, gold)[0])
    assert float(merged["pearson"]) == pytest.approx(100 * pearsonr(pred, gold)[0])
    assert merged["n"] == "31"
    assert "3 --shard parts merged" in (tmp_path / "parts" / "report.md").read_text(encoding="utf-8")
    capsys.readouterr()


def test_a_missing_part_is_refused_in_one_line(
    runs: tuple[Path, list[Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, parts = runs
    capsys.readouterr()
    assert main(["report", str(parts[0]), str(parts[2]), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "part(s) 2/3 missing" in err
    assert not (tmp_path / "r").exists()


def test_an_altered_part_is_refused_not_merged(
    runs: tuple[Path, list[Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, parts = runs
    copy = tmp_path / parts[1].name
    copy.mkdir()
    for f in parts[1].iterdir():
        if f.is_file():
            (copy / f.name).write_bytes(f.read_bytes())
    lines = (copy / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0]) | {"prediction": 5.0}
    (copy / "samples.jsonl").write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["report", str(parts[0]), str(copy), str(parts[2]), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    last = err.splitlines()[-1]  # after load_readable's warning about the altered folder
    assert last.startswith("error: --shard part ") and f"{copy} is altered" in last


def test_a_sharded_sweep_reports_as_the_one_machine_sweep(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    grid = ["--model", "overlap", "--dataset", "stsb", "--limit", "12", "--shots", "0,2", "--no-progress"]
    for name, extra in (("whole", []), ("a", ["--shard", "1/2"]), ("b", ["--shard", "2/2"])):
        assert main([*grid, "--results-dir", str(tmp_path / name), *extra]) == 0
    sweeps = {name: next((tmp_path / name).glob("sweep-*")) for name in ("whole", "a", "b")}
    one = report(tmp_path / "r1", sweeps["whole"])
    merged = report(tmp_path / "r2", sweeps["a"], sweeps["b"])
    assert len(one) == 2 and merged == one
    capsys.readouterr()


@pytest.mark.parametrize("bad", ["4/3", "0/3", "2", "a/b", "1/0"])
def test_a_bad_shard_is_one_error_line_and_writes_nothing(
    bad: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*RUN, "--results-dir", str(tmp_path / "results"), "--shard", bad]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "K/N" in err
    assert not (tmp_path / "results").exists()


def test_parts_read_with_other_think_tags_are_refused_naming_the_setting(
    runs: tuple[Path, list[Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 41: a part run with another --think-tags was merged into a number no one-machine run gives."""
    _, parts = runs
    other = run(tmp_path / "results", "--shot-sampler", "reference", "--shard", "2/3", "--think-tags", "none")
    capsys.readouterr()
    assert main(["report", str(parts[0]), str(other), str(parts[2]), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --shard parts ") and err.count("\n") == 1
    assert "differ in --think-tags ('auto', 'none')" in err and str(other) in err
    assert not (tmp_path / "r").exists()


def test_a_part_recorded_before_the_marks_is_refused_naming_the_setting(
    runs: tuple[Path, list[Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A part whose whole_hash does not say the setting (written before --think-tags entered the identity) is
    still compared by the marks of its recorded settings."""
    loaded = [load_run(p) for p in runs[1]]
    settings = loaded[1].config["settings"] | {"think_tags": "none"}
    odd = dataclasses.replace(loaded[1], config=loaded[1].config | {"settings": settings})
    with pytest.raises(HarnessError, match=r"differ in --think-tags \('auto', 'none'\); not merged"):
        merge_shards([loaded[0], odd, loaded[2]])
    assert len(merge_shards(loaded)[0]) == 1  # the parts as written merge


def test_parts_from_two_commits_are_refused_and_one_commit_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The code a number was computed with belongs with it: parts from two commits are not merged; the merged
    report names the commit of parts from one."""
    import harness.runner

    results = tmp_path / "results"
    made = []
    for k, commit in ((1, "a" * 40), (2, "b" * 40), (2, "a" * 40)):
        monkeypatch.setattr(harness.runner, "git_commit", lambda c=commit: {"commit": c, "dirty": False})
        made.append(run(results, "--shard", f"{k}/2"))
    capsys.readouterr()
    assert main(["report", str(made[0]), str(made[1]), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"differ in the git commit ({'a' * 40}, {'b' * 40}); not merged" in err
    report(tmp_path / "ok", made[0], made[2])
    assert f"computed with commit {'a' * 12}:" in (tmp_path / "ok" / "report.md").read_text(encoding="utf-8")


def _with_shard(part: Path, folder: Path, shard: dict) -> Path:
    """A copy of a part whose config.json records `shard` (and a manifest that agrees: results/manifest.py)."""
    from harness.results.manifest import write_manifest

    folder.mkdir()
    for f in part.iterdir():
        if f.is_file() and f.name != "manifest.json":
            (folder / f.name).write_bytes(f.read_bytes())
    config = json.loads((folder / "config.json").read_text()) | {"shard": shard}
    (folder / "config.json").write_text(json.dumps(config))
    write_manifest(folder)
    return folder


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"of": 10**12}, "is not part K of N <= 100,000 parts"),  # hung: counted to 10**12
        ({"of": "three"}, "is not part K of N <= 100,000 parts"),  # a traceback: int("three")
        ({"part": True}, "is not part K of N <= 100,000 parts"),
        (
            {"part": 1, "of": 1, "whole_queries": 10**15},
            "do not hold each of its 1,000,000,000,000,000 queries once",
        ),  # hung
        ({"of": 100_000}, "part(s) 2/100000, 3/100000, 4/100000 and 99,996 more missing"),
    ],
)
def test_a_recorded_shard_of_any_size_or_type_is_one_error_line(
    runs: tuple[Path, list[Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str], changes: dict, says: str
) -> None:
    _, parts = runs
    shard = json.loads((parts[0] / "config.json").read_text())["shard"] | changes
    bad = _with_shard(parts[0], tmp_path / "bad", shard)
    capsys.readouterr()
    code = finishes(lambda: main(["report", str(bad), "--out", str(tmp_path / "r")]))
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1 and says in err, err
    assert not (tmp_path / "r").exists()


def finishes(command: Callable[[], int], wait: float = 60.0) -> int:
    """The command's exit code; the test fails if it runs past `wait` seconds (a hang)."""
    codes: list[int] = []
    thread = threading.Thread(target=lambda: codes.append(command()), daemon=True)
    thread.start()
    thread.join(wait)
    if thread.is_alive():
        pytest.fail(f"the command hung (no end within {wait:g}s)")
    return codes[0]


def test_a_shard_count_past_the_bound_is_refused_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An honest `--shard 1/10000000000` made a part whose report counted to 10**10."""
    assert main([*RUN, "--results-dir", str(tmp_path / "results"), "--shard", "1/10000000000"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "at most 100,000 parts (N)" in err
    assert not (tmp_path / "results").exists()
    assert main([*RUN, "--results-dir", str(tmp_path / "results"), "--shard", "1/100000"]) == 0  # the bound: allowed
