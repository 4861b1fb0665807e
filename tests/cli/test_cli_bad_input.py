"""Issue 10, "bad input gets one line, exit 2, and nothing written — everywhere": one test walks the class list.

Each case sets up its bad input, runs the command line in-process, and checks: exit status 2, exactly one
`error: ...` line on stderr naming the problem, nothing on stdout, and no run folder, cache or output file
left behind. An alarm turns a hang (a FIFO read) into a failure instead of a stuck test run.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.prompting.render import TEMPLATES_DIR
from tests.conftest import csv_bytes, synthetic_rows
from tests.fake_server import FakeServer

Case = tuple[str, Callable[[Path, Path], list[str]], str]


def _template(source: bytes) -> Callable[[Path, Path], list[str]]:
    def setup(tmp: Path, data: Path) -> list[str]:
        (tmp / "t.j2").write_bytes(source)
        return ["--model", "overlap", "--data-dir", str(data), "--template", str(tmp / "t.j2")]

    return setup


def _split_file(rows: bytes | None, kind: str = "file") -> Callable[[Path, Path], list[str]]:
    def setup(tmp: Path, data: Path) -> list[str]:
        target = data / "csts_validation.csv"
        target.unlink()
        if kind == "fifo":
            os.mkfifo(target)
        elif kind == "dir":
            target.mkdir()
        else:
            target.write_bytes(rows or b"")
        return ["--model", "overlap", "--data-dir", str(data)]

    return setup


def _fifo(flag: str, *extra: str) -> Callable[[Path, Path], list[str]]:
    def setup(tmp: Path, data: Path) -> list[str]:
        os.mkfifo(tmp / "pipe.j2")
        extra_args = [a.replace("DATA", str(data)) for a in extra]
        return ["--model", "overlap", "--data-dir", str(data), flag, str(tmp / "pipe.j2"), *extra_args]

    return setup


def _ids(text: str, flag: str, *extra: str) -> Callable[[Path, Path], list[str]]:
    def setup(tmp: Path, data: Path) -> list[str]:
        (tmp / "ids.txt").write_text(text)
        return ["--model", "overlap", "--data-dir", str(data), flag, str(tmp / "ids.txt"), *extra]

    return setup


def _args(*argv: str) -> Callable[[Path, Path], list[str]]:
    return lambda tmp, data: [a.replace("DATA", str(data)).replace("TMP", str(tmp)) for a in argv]


LONG_CELL = b"sentence1,sentence2,condition,label\na,b,c,1\n" + b'"' + b"x" * 131_073 + b'",b,c,2\n'
BAD_INPUT: list[Case] = [
    # templates
    ("template includes a missing file", _template(b'{% include "nothere.j2" %}'), "included template 'nothere.j2'"),
    ("template raises", _template(b"{{ 1/0 }}"), "template t.j2 line 1: ZeroDivisionError"),
    ("template is not UTF-8", _template(b"caf\xe9 {{ query.sentence1 }}"), "t.j2: not UTF-8 text"),
    ("template has a syntax error", _template(b"{% if %}"), "template t.j2: line 1"),
    ("template is a FIFO", _fifo("--template"), "is a FIFO"),
    # data files
    ("CSV cell over 131,072 characters", _split_file(LONG_CELL), "field larger than field limit (131072)"),
    ("C-STS label 17", _split_file(b"sentence1,sentence2,condition,label\na,b,c,17\n"), "label 17 is outside"),
    ("validation label -1", _split_file(b"sentence1,sentence2,condition,label\na,b,c,-1\n"), "hidden only in the test"),
    (
        "an unquoted decimal comma (issue 20.4)",
        _split_file(b"sentence1,sentence2,condition,label\na,b,The cond.,3,5\n"),
        "csts_validation.csv row 2: 5 fields, the header has 4",
    ),
    (
        "a row of 10,000 fields",
        _split_file(b"sentence1,sentence2,condition,label\n" + b",".join([b"x"] * 10_000) + b"\n"),
        "csts_validation.csv row 2: 10000 fields, the header has 4",
    ),
    (
        "a whitespace-only sentence",
        _split_file(b"sentence1,sentence2,condition,label\na,b,c,3\n \t ,b,c,3\n"),
        "csts_validation.csv row 3: empty sentence",
    ),
    ("a FIFO where a CSV should be", _split_file(None, "fifo"), "csts_validation.csv is a FIFO"),
    ("a directory where a CSV should be", _split_file(None, "dir"), "csts_validation.csv is a directory"),
    ("a file as --data-dir", _args("--model", "overlap", "--data-dir", "DATA/csts_train.csv"), "is not a directory"),
    ("a FIFO as --archive", _fifo("--archive", "--password-file", "DATA/csts_train.csv"), "C-STS archive"),
    ("a FIFO as --password-file", _fifo("--password-file", "--archive", "DATA/csts_train.csv"), "password file"),
    ("a directory as --archive", _args("--model", "overlap", "--archive", "DATA"), "C-STS archive"),
    # names and paths
    ("--run-id ../../x", _args("--model", "overlap", "--data-dir", "DATA", "--run-id", "../../x"), "plain folder name"),
    ("--run-id .hidden", _args("--model", "overlap", "--data-dir", "DATA", "--run-id", ".x"), "plain folder name"),
    (
        "missing --answers file",
        _args("--model", "gpt-4o", "--variant", "qa", "--data-dir", "DATA", "--answers", "TMP/none.jsonl"),
        "answers file",
    ),
    ("a FIFO as --answers", _fifo("--answers", "--variant", "qa"), "answers file"),
    (
        "a device as --password-file",
        _args("--model", "overlap", "--archive", "DATA/csts_train.csv", "--password-file", "/dev/null"),
        "password file /dev/null is a device, not a file",
    ),
    (
        "--answers not UTF-8",
        lambda tmp, data: [
            (tmp / "a.jsonl").write_bytes(b"\xff\n") and "--model",
            "gpt-4o",
            "--variant",
            "qa",
            "--data-dir",
            str(data),
            "--answers",
            str(tmp / "a.jsonl"),
        ],
        "is not UTF-8",
    ),
    ("a directory as --prices", _args("--model", "gpt-4o", "--data-dir", "DATA", "--prices", "TMP"), "price table"),
    # numbers
    *[
        (f"{flag} {value}", _args("--model", "overlap", "--data-dir", "DATA", f"{flag}={value}"), f"{flag} must be")
        for flag in ("--max-cost", "--timeout", "--gpu-memory-utilization")
        for value in ("nan", "inf", "-inf", "-1")
    ],
    ("--max-tokens 0", _args("--model", "overlap", "--data-dir", "DATA", "--max-tokens", "0"), "--max-tokens must be"),
    ("--shots x", _args("--model", "overlap", "--data-dir", "DATA", "--shots", "x"), "invalid int value: 'x'"),
    # commands
    ("a mistyped command", _args("reprot", "results"), "unknown command 'reprot': did you mean 'report'?"),
    ("no --model", _args("--dataset", "stsb"), "the following arguments are required: --model"),
    ("compare --resamples 0", _args("compare", "TMP", "TMP", "--resamples", "0"), "--resamples must be at least 1"),
    (
        "report --published FIFO",
        lambda tmp, data: [os.mkfifo(tmp / "p.csv"), "report", str(tmp), "--published", str(tmp / "p.csv")][1:],
        "--published",
    ),
    ("data-report --json on a directory", _args("data-report", "--dataset", "stsb", "--json", "TMP"), "--json"),
    # a dry run validates what a real run validates
    ("dry run, unknown model", _args("--model", "nosuchmodel", "--data-dir", "DATA", "--dry-run"), "unknown model"),
    (
        "dry run, sweep naming one",
        _args("--model", "overlap,nosuchmodel", "--data-dir", "DATA", "--dry-run"),
        "unknown model 'nosuchmodel'",
    ),
    (
        "dry run, offline model with no backend",
        _args("--backend", "offline", "--model", "bert", "--data-dir", "DATA", "--dry-run"),
        "offline backend has no model 'bert'",
    ),
    (
        "dry run, --max-cost without a price",
        _args(
            "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--max-cost", "1", "--data-dir", "DATA", "--dry-run"
        ),
        "--max-cost needs a price",
    ),
    (
        "dry run, --scoring expected on Anthropic (no log-probabilities)",
        _args("--model", "claude-haiku-4-5", "--data-dir", "DATA", "--scoring", "expected", "--dry-run"),
        "--scoring expected needs the first output token's log-probabilities",
    ),
    # Issue 44: chosen items, pinned shots, repeated samples
    ("--ids naming an unknown id", _ids("3\n99\n", "--ids"), "id 99 (its 2nd id) is not in csts validation"),
    ("--ids listing an id twice", _ids("3\n3\n", "--ids"), "line 2: id 3 is listed twice"),
    ("--ids listing nothing", _ids("# none\n", "--ids"), "lists no id"),
    ("a FIFO as --ids", _fifo("--ids"), "--ids file"),
    ("--shot-ids naming an unknown id", _ids("999\n", "--shot-ids", "--shots", "2"), "id 999 is not a row of"),
    ("--shot-ids too few", _ids("0\n", "--shot-ids", "--shots", "4"), "names 1 usable sentence pairs, too few for k=4"),
    (
        "--limit and --sample",
        _args("--model", "overlap", "--data-dir", "DATA", "--limit", "2", "--sample", "2"),
        "--limit and --sample each choose the items",
    ),
    ("--sample 0", _args("--model", "overlap", "--data-dir", "DATA", "--sample", "0"), "--sample must be at least 1"),
    (
        "--repeats 0",
        _args("--model", "overlap", "--data-dir", "DATA", "--repeats", "0"),
        "--repeats must be at least 1",
    ),
    ("--temperature -1", _args("--model", "overlap", "--data-dir", "DATA", "--temperature=-1"), "--temperature must"),
    (
        "--repeats with --parse strict",
        _args("--model", "overlap", "--data-dir", "DATA", "--repeats", "2", "--parse", "strict"),
        "--repeats combines",
    ),
    (
        "--repeats with --variant qa",
        _args("--model", "gpt-4o", "--variant", "qa", "--data-dir", "DATA", "--repeats", "2", "--dry-run"),
        "--repeats and --temperature belong to --variant sentences",
    ),
    (
        "--temperature on the greedy-only hf backend",
        _args("--model", "smollm2-135m", "--data-dir", "DATA", "--temperature", "0.7", "--dry-run"),
        "--temperature 0.7: the hf backend decodes greedily only",
    ),
    (
        "--temperature on Anthropic without --anthropic-greedy (it would not be sent)",
        _args("--model", "claude-haiku-4-5", "--data-dir", "DATA", "--temperature", "0.5", "--dry-run"),
        "--temperature 0.5: Anthropic's current API version takes no temperature",
    ),
    (
        "--temperature on an OpenAI reasoning model",
        _args("--model", "o3-mini", "--data-dir", "DATA", "--temperature", "0.5", "--dry-run"),
        "--temperature 0.5: OpenAI's reasoning models reject temperature",
    ),
]


def _alarm(signum: int, frame: object) -> None:
    raise TimeoutError("the command blocked (a FIFO read?)")


def test_every_class_of_bad_input_is_one_line_exit_2_and_nothing_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    failures = []
    old = signal.signal(signal.SIGALRM, _alarm)
    try:
        for i, (name, setup, message) in enumerate(BAD_INPUT):
            case = tmp_path / f"case{i}"
            data = case / "csts"
            data.mkdir(parents=True)
            (data / "csts_train.csv").write_bytes(csv_bytes(synthetic_rows(20, 1)))
            (data / "csts_validation.csv").write_bytes(csv_bytes(synthetic_rows(5, 2)))
            argv = setup(case, data)
            before = sorted(p.relative_to(case) for p in case.rglob("*"))
            if argv[0].startswith("-"):  # a run (sub-commands take no --results-dir)
                argv += ["--results-dir", str(case / "results"), "--no-progress"]
            signal.alarm(20)
            try:
                code = main(argv)
            finally:
                signal.alarm(0)
            out, err = capsys.readouterr()
            after = sorted(p.relative_to(case) for p in case.rglob("*"))
            written = sorted(set(after) - set(before))
            ok = code == 2 and err.startswith("error: ") and err.count("\n") == 1 and message in err and not out
            if not ok or written:
                failures.append(f"{name}: exit {code}, stderr {err!r}, stdout {out[:80]!r}, wrote {written}")
    finally:
        signal.signal(signal.SIGALRM, old)
    assert failures == [], "\n".join(failures)


def test_a_copy_of_a_bundled_template_passed_by_path_works(tmp_path: Path, csts_dir: Path) -> None:
    mine = tmp_path / "my-long.j2"
    mine.write_text((TEMPLATES_DIR / "csts" / "long.j2").read_text())
    common = ["--model", "overlap", "--data-dir", str(csts_dir), "--shots", "2", "--no-progress"]
    assert main([*common, "--template", str(mine), "--results-dir", str(tmp_path / "a"), "--run-id", "r"]) == 0
    assert main([*common, "--instr", "long", "--results-dir", str(tmp_path / "b"), "--run-id", "r"]) == 0
    prompts = [
        [json.loads(line)["prompt"] for line in (tmp_path / d / "r" / "samples.jsonl").read_text().splitlines()]
        for d in ("a", "b")
    ]
    assert prompts[0] == prompts[1]


def test_qa_embed_dry_run_works(tmp_path: Path, csts_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--variant", "qa-embed", "--model", "text-embedding-3-small", "--answer-model", "gpt-4o", "--limit", "4"]
    assert main([*argv, "--data-dir", str(csts_dir), "--dry-run", "--results-dir", str(tmp_path), "--run-id", "d"]) == 0
    metrics = json.loads((tmp_path / "d" / "metrics.json").read_text())
    assert (
        metrics["dry_run"] and metrics["answers"]["requests"] > 0 and "at most 8" in metrics["embeddings"]["requests"]
    )
    samples = (tmp_path / "d" / "samples.jsonl").read_text().splitlines()
    assert len(samples) == 4 and "dry run: " in capsys.readouterr().out


@pytest.mark.parametrize("dry", [True, False])
def test_base_url_without_backend_means_the_openai_compatible_server(
    tmp_path: Path, dry: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 10: a --base-url run with a name that implies no backend is what a user means, dry or not."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeServer() as server:
        argv = ["--model", "my-model", "--base-url", server.openai_url, "--dataset", "stsb", "--limit", "3"]
        argv += ["--results-dir", str(tmp_path), "--run-id", "r", "--no-progress", *(["--dry-run"] if dry else [])]
        assert main(argv) == 0
    assert len(server.calls) == (0 if dry else 3)
    config = json.loads((tmp_path / "r" / "config.json").read_text())
    assert config["backend"] == (None if dry else "openai")


PARITY = [
    ["--model", "nosuchmodel"],
    ["--model", "overlap,nosuchmodel"],
    ["--backend", "offline", "--model", "bert"],
    ["--backend", "hf", "--model", "./no/such/checkpoint"],
    ["--model", "my-model", "--base-url", "http://127.0.0.1:9/v1", "--max-cost", "1"],
    ["--model", "gpt-4o", "--no-chat"],
    ["--model", "gpt-4o", "--variant", "qa", "--answer-model", "overlap"],
    ["--model", "overlap", "--variant", "qa-embed", "--answer-model", "gpt-4o"],
    ["--model", "claude-haiku-4-5", "--scoring", "expected"],
    ["--model", "overlap", "--timeout", "nan"],
]


@pytest.mark.parametrize("argv", PARITY, ids=[" ".join(a) for a in PARITY])
def test_a_dry_run_refuses_what_a_real_run_refuses_with_the_same_message(
    argv: list[str], tmp_path: Path, csts_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    common = ["--data-dir", str(csts_dir), "--results-dir", str(tmp_path / "r"), "--no-progress"]
    assert main([*argv, *common]) == 2
    real = capsys.readouterr().err
    assert main([*argv, *common, "--dry-run"]) == 2
    assert capsys.readouterr().err == real and real.startswith("error: ") and real.count("\n") == 1
    assert not (tmp_path / "r").exists()
