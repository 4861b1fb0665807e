"""The command line as a user meets it: runs, dry runs, the submission file, and one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli.main import main
from tests.conftest import ROOT, SHARED_ARCHIVE, SHARED_PASSWORD, requires_shared


def _run(args: list[str], tmp_path: Path) -> int:
    return main([*args, "--results-dir", str(tmp_path / "results"), "--no-progress"])


def _only_run_dir(tmp_path: Path) -> Path:
    (run_dir,) = [p for p in (tmp_path / "results").iterdir() if p.is_dir() and not p.name.startswith(".")]
    return run_dir


def test_offline_stsb_run_writes_a_complete_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        _run(["--dataset", "stsb", "--model", "overlap", "--shots", "2", "--instr", "short", "--limit", "30"], tmp_path)
        == 0
    )
    run_dir = _only_run_dir(tmp_path)
    assert run_dir.name.startswith("stsb-validation-overlap-k2-short-")
    names = sorted(p.name for p in run_dir.iterdir())
    assert names == ["config.json", "manifest.json", "metrics.json", "samples.jsonl"]
    samples = [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 30
    assert set(samples[0]) == {
        "id",
        "prompt",
        "shot_ids",
        "output",
        "parsed",
        "valid",
        "prediction",
        "label",
        "error",
        "pair",
        "reason",
        "parsed_strict",
        "prediction_strict",
        "finish_reason",
        "usage",
        "served_model",
        "refusal",
        "truncated",
    }
    assert all(len(s["shot_ids"]) == 2 and s["valid"] and s["reason"] == "number" for s in samples)
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["n"] == 30 and metrics["invalid_pct"] == 0.0
    assert "spearman=" in capsys.readouterr().out


def test_config_records_settings_hashes_and_versions(tmp_path: Path, csts_dir: Path) -> None:
    _run(["--model", "overlap", "--data-dir", str(csts_dir), "--shots", "4", "--instr", "long"], tmp_path)
    config = json.loads((_only_run_dir(tmp_path) / "config.json").read_text())
    assert config["settings"]["shots"] == 4 and config["settings"]["instr"] == "long"
    assert set(config["template_hashes"]) == {"csts/long.j2", "csts/none.j2"}
    assert set(config["data_hashes"]) == {"csts_train.csv", "csts_validation.csv"}
    assert config["packages"]["jinja2"] and "commit" in config["git"]
    assert len(config["config_hash"]) == 16


def test_random_baseline_is_all_invalid_and_reproducible(tmp_path: Path, csts_dir: Path) -> None:
    args = ["--model", "random", "--data-dir", str(csts_dir), "--shots", "2"]
    _run([*args, "--run-id", "a"], tmp_path)
    _run([*args, "--run-id", "b"], tmp_path)
    a = (tmp_path / "results" / "a" / "samples.jsonl").read_text()
    b = (tmp_path / "results" / "b" / "samples.jsonl").read_text()
    assert a == b
    metrics = json.loads((tmp_path / "results" / "a" / "metrics.json").read_text())
    assert metrics["invalid_pct"] == 100.0
    preds = [json.loads(line)["prediction"] for line in a.splitlines()]
    assert all(1.0 <= p <= 5.0 for p in preds) and len(set(preds)) == len(preds)


def test_dry_run_renders_everything_and_calls_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert (
        _run(["--dataset", "stsb", "--model", "gpt-4", "--shots", "4", "--instr", "long", "--dry-run"], tmp_path) == 0
    )
    out = capsys.readouterr().out
    assert "dry run: 1500 requests" in out and "prompt tokens" in out
    samples = [json.loads(line) for line in (_only_run_dir(tmp_path) / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 1500
    assert all(s["prompt"].startswith("Definition:") and s["output"] is None for s in samples)


def test_api_model_without_key_fails_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert _run(["--dataset", "stsb", "--model", "gpt-4"], tmp_path) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "OPENAI_API_KEY" in err
    assert not (tmp_path / "results").exists()


def test_test_split_writes_the_submission_file(tmp_path: Path, csts_dir: Path) -> None:
    assert _run(["--model", "overlap", "--data-dir", str(csts_dir), "--split", "test", "--shots", "2"], tmp_path) == 0
    run_dir = _only_run_dir(tmp_path)
    predictions = json.loads((run_dir / "test_predictions.json").read_text())
    assert list(predictions) == [str(i) for i in range(20)]
    assert all(isinstance(v, float) for v in predictions.values())
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert "spearman" not in metrics and metrics["submission"] == "test_predictions.json"


def test_partial_test_run_writes_no_submission(tmp_path: Path, csts_dir: Path) -> None:
    _run(["--model", "overlap", "--data-dir", str(csts_dir), "--split", "test", "--limit", "5"], tmp_path)
    run_dir = _only_run_dir(tmp_path)
    assert not (run_dir / "test_predictions.json").exists()
    assert "not written" in json.loads((run_dir / "metrics.json").read_text())["submission"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--instr", "bogus"], "unknown instruction level 'bogus'"),
        (["--template", "nope"], "unknown template 'csts/nope.j2'"),
        (["--data-dir", "/nonexistent/csts"], "does not exist"),
        (["--shots", "-1"], "--shots must be 0 or more"),
        (["--limit", "0"], "--limit must be at least 1"),
        (["--model", "llama-7b"], "unknown model 'llama-7b'"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(
    extra: list[str], message: str, tmp_path: Path, csts_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--model", "overlap", "--data-dir", str(csts_dir), *extra]
    assert _run(args, tmp_path) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and message in err
    assert not (tmp_path / "results").exists()


def test_csv_without_condition_column(tmp_path: Path, csts_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = csts_dir / "csts_validation.csv"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(line.rsplit(",", 2)[0] + "," + line.rsplit(",", 1)[1] for line in lines) + "\n")
    assert _run(["--model", "overlap", "--data-dir", str(csts_dir)], tmp_path) == 2
    assert "missing column(s) condition" in capsys.readouterr().err
    assert not (tmp_path / "results").exists()


def test_wrong_password(tmp_path: Path, csts_archive: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    archive, _ = csts_archive
    bad = tmp_path / "bad-password"
    bad.write_text("guess\n")
    assert _run(["--model", "overlap", "--archive", str(archive), "--password-file", str(bad)], tmp_path) == 2
    assert "wrong password" in capsys.readouterr().err
    assert not (tmp_path / "results").exists()


def test_extract_command(tmp_path: Path, csts_archive: tuple[Path, Path]) -> None:
    archive, pw = csts_archive
    assert main(["extract", "--archive", str(archive), "--password-file", str(pw), "--out", str(tmp_path / "d")]) == 0
    assert (tmp_path / "d" / "csts_validation.csv").is_file()


def test_run_eval_script_exits_non_zero_with_one_line(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "run_eval.py"), "--model", "overlap", "--data-dir", str(tmp_path / "none")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: C-STS data directory") and proc.stderr.count("\n") == 1


@requires_shared
def test_overlap_baseline_separates_stsb_from_csts(tmp_path: Path) -> None:
    """The paper's point, offline: surface overlap tracks STS-B but not conditional similarity."""
    shared = ["--archive", str(SHARED_ARCHIVE), "--password-file", str(SHARED_PASSWORD)]
    _run(["--model", "overlap", *shared, "--run-id", "csts"], tmp_path)
    _run(["--model", "overlap", "--dataset", "stsb", "--run-id", "stsb"], tmp_path)
    csts = json.loads((tmp_path / "results" / "csts" / "metrics.json").read_text())
    stsb = json.loads((tmp_path / "results" / "stsb" / "metrics.json").read_text())
    assert stsb["spearman"] > 50 and abs(csts["spearman"]) < 15


def test_same_setting_twice_in_one_second_gets_two_folders(tmp_path: Path) -> None:
    args = ["--dataset", "stsb", "--model", "overlap", "--limit", "3"]
    assert _run(args, tmp_path) == 0 and _run(args, tmp_path) == 0
    dirs = sorted((tmp_path / "results").iterdir())
    assert len(dirs) == 2 and all((d / "metrics.json").is_file() for d in dirs)


def test_existing_run_id_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--dataset", "stsb", "--model", "overlap", "--limit", "3", "--run-id", "same"]
    assert _run(args, tmp_path) == 0
    assert _run(args, tmp_path) == 2
    err = capsys.readouterr().err
    assert "already exists: choose another --run-id" in err
    assert "response cache" not in err  # the overlap baseline keeps nothing in a cache: no promise of one


def test_a_taken_run_id_says_that_another_is_scored_from_the_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # issue 42: a researcher re-ran a finished run's command and was told to choose another --run-id, not that
    # another one costs no request: every answer comes from the response cache
    from tests.fake_server import FakeServer

    with FakeServer() as server:
        args = ["--model", "m", "--base-url", server.openai_url, "--dataset", "stsb", "--limit", "6"]
        assert _run([*args, "--run-id", "same"], tmp_path) == 0
        sent = len(server.received())
        capsys.readouterr()
        assert _run([*args, "--run-id", "same"], tmp_path) == 2
        cache = tmp_path / "results" / "cache.sqlite"
        assert capsys.readouterr().err == (
            f"error: {tmp_path / 'results' / 'same'} already exists: choose another --run-id (the same settings under "
            f"another --run-id are scored from the response cache {cache}: no answer it holds is asked for again)\n"
        )
        assert _run([*args, "--run-id", "other"], tmp_path) == 0  # what the line says: nothing sent again
        assert len(server.received()) == sent == 6
        assert "cache: 6 hits, 0 misses" in capsys.readouterr().out
        for off in (["--no-cache"], ["--refresh"]):  # the cache not read: the line does not promise it
            assert _run([*args, "--run-id", "same", *off], tmp_path) == 2
            assert "response cache" not in capsys.readouterr().err


def test_an_all_echo_run_says_why_its_numbers_mislead(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 15: a small model echoing "Sentence 1: ..." parses as 1.0 every time: 0 % invalid, Spearman None.
    The reason codes and the note say what happened, on the CLI line and in metrics.json."""
    from tests.fake_server import FakeServer

    with FakeServer(answer=lambda prompt: "Sentence 1: " + prompt[-40:]) as server:
        argv = ["--model", "m", "--base-url", server.openai_url, "--dataset", "stsb", "--limit", "40"]
        assert _run([*argv, "--run-id", "echo", "--parse", "strict"], tmp_path) == 0
    out = capsys.readouterr().out
    assert "invalid_pct=0.00" in out
    assert "spearman=None†  pearson=None†" in out and "(† constant predictions: all 40 parsed as 1.0)" in out
    assert "reasons: echo=40" in out
    assert "strict parse (not the paper's rule): invalid_strict_pct=100.00" in out
    metrics = json.loads((tmp_path / "results" / "echo" / "metrics.json").read_text())
    assert metrics["reasons"] == {"echo": 40} and metrics["spearman"] is None
    assert metrics["spearman_note"] == metrics["pearson_note"] == "constant predictions: all 40 parsed as 1.0"
    assert metrics["invalid_strict_pct"] == 100.0 and metrics["invalid_pct"] == 0.0
    samples = [json.loads(line) for line in (tmp_path / "results" / "echo" / "samples.jsonl").read_text().splitlines()]
    assert {s["reason"] for s in samples} == {"echo"} and {s["parsed"] for s in samples} == {1.0}


def test_a_small_run_flags_its_correlations_with_n(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(["--dataset", "stsb", "--model", "overlap", "--limit", "12", "--run-id", "small"], tmp_path) == 0
    line = capsys.readouterr().out.splitlines()[0]
    metrics = json.loads((tmp_path / "results" / "small" / "metrics.json").read_text())
    # each flagged number marked, its note said once (issue 42: the line said "(n=12)" four times)
    assert f"spearman={metrics['spearman']:.2f}†  pearson={metrics['pearson']:.2f}†" in line
    assert line.endswith("  († n=12)") and line.count("†") == 5  # four numbers marked, one note
    assert {k for k in metrics if k.endswith("_note")} == {
        "spearman_note",
        "pearson_note",
        "spearman_valid_note",
        "pearson_valid_note",
    }
    assert metrics["spearman_note"] == "n=12"


def test_max_tokens_is_what_the_server_receives(tmp_path: Path) -> None:
    from tests.fake_server import FakeServer

    with FakeServer() as server:
        argv = ["--model", "m", "--base-url", server.openai_url, "--dataset", "stsb", "--limit", "2"]
        assert _run([*argv, "--max-tokens", "5"], tmp_path) == 0
    assert {c.body["max_tokens"] for c in server.calls} == {5}
