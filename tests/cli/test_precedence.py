"""Where each setting comes from: a flag beats its environment variable, which beats the default (README "Options").

Every option of `run` is in one table: its flag and value must land in that RunConfig field, and leaving it out
must give RunConfig's own default. The environment variables that stand in for flags (CSTS_DATA_DIR for
--data-dir, CSTS_PASSWORD for --password-file) are checked end to end: the run's recorded data hashes say which
files it read.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli.configs import config_from_args
from harness.cli.main import main
from harness.cli.options import run_parser
from harness.config.settings import RunConfig
from tests.conftest import write_synthetic_csts

# (argv after --model m, dotted RunConfig field, the value it must have)
FLAGS: list[tuple[list[str], str, Any]] = [
    (["--backend", "openai"], "backend", "openai"),
    (["--dataset", "stsb"], "dataset", "stsb"),
    (["--split", "test"], "split", "test"),
    (["--shots", "4"], "shots", 4),
    (["--instr", "long"], "instr", "long"),
    (["--template", "t.j2"], "template", "t.j2"),
    (["--seed", "5"], "seed", 5),
    (["--limit", "7"], "limit", 7),
    (["--sample", "50"], "sample", 50),
    (["--sample-seed", "3"], "sample_seed", 3),
    (["--ids", "ids.txt"], "ids", Path("ids.txt")),
    (["--labels", "reannotated"], "labels", "reannotated"),
    (["--subset", "reannotated-test"], "subset", "reannotated-test"),
    (["--subset-seed", "3"], "subset_seed", 3),
    (["--variant", "qa"], "variant", "qa"),
    (["--answer-model", "a"], "answer_model", "a"),
    (["--answer-backend", "hf"], "answer_backend", "hf"),
    (["--answers", "x.jsonl"], "answers", Path("x.jsonl")),
    (["--data-dir", "d"], "data_dir", Path("d")),
    (["--archive", "a.enc"], "archive", Path("a.enc")),
    (["--password-file", "pw"], "password_file", Path("pw")),
    (["--results-dir", "r"], "results_dir", Path("r")),
    (["--run-id", "one"], "run_id", "one"),
    (["--dry-run"], "dry_run", True),
    (["--no-progress"], "progress", False),
    (["--chat"], "chat", True),
    (["--no-chat"], "chat", False),
    (["--stop", "###"], "stop", ("###",)),
    (["--max-tokens", "9"], "max_tokens", 9),
    (["--shot-sampler", "seeded"], "shot_sampler", "seeded"),
    (["--shot-seed", "11"], "shot_seed", 11),
    (["--shot-ids", "shots.txt"], "shot_ids", Path("shots.txt")),
    (["--repeats", "5"], "repeats", 5),
    (["--temperature", "0.7"], "temperature", 0.7),
    (["--reduce", "median"], "reduce", "median"),
    (["--scoring", "expected"], "scoring", "expected"),
    (["--parse", "strict"], "parse", "strict"),
    (["--constrain"], "constrain", "native"),
    (["--constrain", "grammar"], "constrain", "grammar"),
    (["--think-tags", "none"], "think_tags", "none"),
    (["--wait-for-server", "30"], "api.wait_for_server", 30.0),
    (["--max-reply-mb", "64"], "api.max_reply_mb", 64.0),
    (["--truncate-input", "512"], "truncate_input", "512"),
    (["--shard", "2/3"], "shard", (2, 3)),
    (["--shard", "3/3"], "shard", (3, 3)),  # the last part: K may equal N
    (["--shard", "1/1"], "shard", (1, 1)),  # one part: K = 1 = N
    (["--case-setting", "sent-c"], "embed.setting", "sent-c"),
    (["--case-inputs", "concat"], "embed.inputs", "concat"),
    (["--case-ffn", "linear"], "embed.ffn", "linear"),
    (["--case-ffn-dim", "64"], "embed.ffn_dim", 64),
    (["--case-ffn-epochs", "7"], "embed.ffn_epochs", 7),
    (["--case-pooling", "whole"], "embed.pooling", "whole"),
    (["--trust-remote-code"], "local.trust_remote_code", True),
    (["--base-url", "http://127.0.0.1:1/v1"], "api.base_urls", ("http://127.0.0.1:1/v1",)),
    (["--concurrency", "3"], "api.concurrency", 3),
    (["--rpm", "60"], "api.rpm", 60.0),
    (["--tpm", "1000"], "api.tpm", 1000.0),
    (["--timeout", "5"], "api.timeout", 5.0),
    (["--max-retries", "2"], "api.max_retries", 2),
    (["--cache", "c.sqlite"], "api.cache", Path("c.sqlite")),
    (["--no-cache"], "api.no_cache", True),
    (["--refresh"], "api.refresh", True),
    (["--max-cost", "1.5"], "api.max_cost", 1.5),
    (["--prices", "p.json"], "api.prices", Path("p.json")),
    (["--reasoning", "yes"], "api.reasoning", True),
    (["--reasoning", "no"], "api.reasoning", False),
    (["--reasoning-tokens", "99"], "api.reasoning_tokens", 99),
    (["--reasoning-effort", "low"], "api.reasoning_effort", "low"),
    (["--anthropic-greedy"], "api.anthropic_greedy", True),
    (["--batch", "--batch-wait", "0"], "api.batch.wait", 0.0),
    (["--batch", "--batch-poll", "5"], "api.batch.poll", 5.0),
    (["--batch", "--batch-max-requests", "10"], "api.batch.max_requests", 10),
    (["--dtype", "float16"], "local.dtype", "float16"),
    (["--tensor-parallel", "2"], "local.tensor_parallel", 2),
    (["--data-parallel", "2"], "local.data_parallel", 2),
    (["--gpu-memory-utilization", "0.5"], "local.gpu_memory_utilization", 0.5),
    (["--max-model-len", "512"], "local.max_model_len", 512),
    (["--batch-size", "4"], "local.batch_size", 4),
]


def _get(config: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        config = getattr(config, part)
    return config


def _config(*argv: str) -> RunConfig:
    return config_from_args(run_parser().parse_args(["--model", "m", *argv]))


def test_no_flags_give_exactly_run_configs_defaults() -> None:
    assert dataclasses.asdict(_config()) == dataclasses.asdict(RunConfig(model="m"))


@pytest.mark.parametrize(("argv", "field", "value"), FLAGS, ids=[" ".join(f[0]) for f in FLAGS])
def test_each_flag_lands_in_its_field_and_differs_from_the_default(argv: list[str], field: str, value: Any) -> None:
    got = _get(_config(*argv), field)
    assert got == value and type(got) is type(value)
    if "batch" not in field:  # --batch's options exist only with --batch (api.batch is None without it)
        assert _get(RunConfig(model="m"), field) != value


def test_the_table_covers_every_option_of_run() -> None:
    options = {s for action in run_parser()._actions for s in action.option_strings if s.startswith("--")}
    covered = {a for argv, _, _ in FLAGS for a in argv if a.startswith("--")}
    # --config names a file whose settings the command line overrides: tests/cli/test_config_file.py pins that
    assert options - covered == {"--help", "--model", "--batch", "--config"} - covered


def _data_hashes(directory: Path) -> dict[str, str]:
    return {
        n: hashlib.sha256((directory / n).read_bytes()).hexdigest() for n in ("csts_train.csv", "csts_validation.csv")
    }


def _dry_run(tmp: Path, run_id: str, *argv: str) -> dict[str, Any]:
    common = ["--model", "overlap", "--limit", "2", "--dry-run", "--no-progress", "--results-dir", str(tmp / "r")]
    assert main([*common, "--run-id", run_id, *argv]) == 0
    return json.loads((tmp / "r" / run_id / "config.json").read_text())


def test_data_dir_flag_beats_csts_data_dir_end_to_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    flag_dir = write_synthetic_csts(tmp_path / "flag", n_val=6)
    env_dir = write_synthetic_csts(tmp_path / "env", n_val=9)
    monkeypatch.setenv("CSTS_DATA_DIR", str(env_dir))
    assert _dry_run(tmp_path, "flag", "--data-dir", str(flag_dir))["data_hashes"] == _data_hashes(flag_dir)
    assert _dry_run(tmp_path, "env")["data_hashes"] == _data_hashes(env_dir)  # no flag: the variable
    monkeypatch.delenv("CSTS_DATA_DIR")
    assert main(["--model", "overlap", "--dry-run", "--results-dir", str(tmp_path / "r2")]) == 2
    assert "error: no C-STS data given" in capsys.readouterr().err  # neither: no default data


# --- the same settings from a --config file, the command line over it, and a recipe's own keys ------------------


def _toml(argv: list[str]) -> str:
    """A FLAGS row as --config TOML: `key = value` (a number unquoted), a switch `key = true` (--no-chat:
    `chat = false`), a repeatable option a list, the bare --constrain its value."""
    lines, i = [], 0
    while i < len(argv):
        key = argv[i].removeprefix("--")
        value = argv[i + 1] if i + 1 < len(argv) and not argv[i + 1].startswith("--") else None
        i += 1 if value is None else 2
        if key == "no-chat":
            lines.append("chat = false")
        elif key == "constrain" and value is None:
            lines.append('constrain = "native"')
        elif value is None:
            lines.append(f"{key} = true")
        elif key in ("stop", "base-url"):
            lines.append(f"{key} = {json.dumps([value])}")
        else:
            number = value.replace(".", "", 1).isdigit()
            lines.append(f"{key} = {value if number else json.dumps(value)}")
    return "\n".join(lines) + "\n"


def _from_file(tmp: Path, text: str, *typed: str) -> RunConfig:
    from harness.cli.config_run import parse_runs

    path = tmp / "run.toml"
    path.write_text(text, encoding="utf-8")
    (args,), _ = parse_runs(str(path), list(typed))
    return config_from_args(args)


@pytest.mark.parametrize(("argv", "field", "value"), FLAGS, ids=[" ".join(f[0]) for f in FLAGS])
def test_each_setting_from_a_config_file_lands_where_its_flag_does(
    argv: list[str], field: str, value: Any, tmp_path: Path
) -> None:
    got = _get(_from_file(tmp_path, 'model = "m"\n' + _toml(argv)), field)
    assert got == value and type(got) is type(value)


# (the file's line, the typed words, dotted field, the value: the typed one, whatever the file says)
TYPED_OVER_FILE: list[tuple[str, list[str], str, Any]] = [
    ("limit = 30", ["--limit", "20"], "limit", 20),
    ("shots = [0, 2]", ["--shots", "4"], "shots", 4),
    ('instr = "long"', ["--instr", "short"], "instr", "short"),
    ("max-reply-mb = 8", ["--max-reply-mb", "16"], "api.max_reply_mb", 16.0),
    ('cache = "a.sqlite"', ["--cache", "b.sqlite"], "api.cache", Path("b.sqlite")),
    ("chat = true", ["--no-chat"], "chat", False),
    ("chat = false", ["--chat"], "chat", True),
    ('stop = ["A", "C"]', ["--stop", "B"], "stop", ("B",)),
    ('base-url = ["http://a:1/v1"]', ["--base-url", "http://b:2/v1"], "api.base_urls", ("http://b:2/v1",)),
    ('reasoning = "yes"', ["--reasoning", "no"], "api.reasoning", False),
    ('dtype = "float16"', ["--dtype", "bfloat16"], "local.dtype", "bfloat16"),
    ("case-ffn-dim = 64", ["--case-ffn-dim", "32"], "embed.ffn_dim", 32),
    ('constrain = "grammar"', ["--constrain"], "constrain", "native"),
    ("batch = true\nbatch-poll = 9", ["--batch-poll", "3"], "api.batch.poll", 3.0),
    ("dry-run = true", [], "dry_run", True),  # a switch the file sets: no typed word turns it off
    ("no-progress = true", [], "progress", False),
]


@pytest.mark.parametrize(("line", "typed", "field", "value"), TYPED_OVER_FILE, ids=[t[0] for t in TYPED_OVER_FILE])
def test_a_typed_flag_beats_the_files_value_which_beats_the_default(
    line: str, typed: list[str], field: str, value: Any, tmp_path: Path
) -> None:
    got = _get(_from_file(tmp_path, f'model = "m"\n{line}\n', *typed), field)
    assert got == value and type(got) is type(value)


def test_grid_lists_from_the_file_and_typed_comma_lists() -> None:
    from harness.cli.configs import grid_from_args

    a = run_parser().parse_args(["--model", "m,n", "--shots", "0,4", "--dataset", "stsb"])
    assert grid_from_args(a) == {"model": ["m", "n"], "shots": [0, 4]}
    assert (config_from_args(a).model, config_from_args(a).shots) == ("m", 0)


def test_a_files_lists_are_the_grid_and_a_typed_comma_list_replaces_one(tmp_path: Path) -> None:
    from harness.cli.config_run import parse_runs
    from harness.cli.configs import grid_from_args

    path = tmp_path / "run.toml"
    path.write_text('model = ["m", "n"]\nshots = [0, 2]\ninstr = ["none", "long"]\n', encoding="utf-8")
    (args,), _ = parse_runs(str(path), ["--shots", "4,8", "--instr", "short"])
    assert grid_from_args(args) == {"model": ["m", "n"], "shots": [4, 8]}
    assert config_from_args(args).instr == "short"


def test_a_recipes_own_keys_land_and_typed_options_beside_them_too() -> None:
    from harness.cli.config_run import parse_runs
    from harness.cli.configs import grid_from_args

    (args,), source = parse_runs("deshpande2023-table12", ["--model", "overlap", "--limit", "3", "--seed", "2"])
    config = config_from_args(args)
    assert source == "Deshpande et al. 2023, Table 12"
    assert (config.dataset, config.template, config.shot_sampler, config.truncate_input) == (
        "stsb",
        "paper",
        "reference",
        "paper",
    )
    assert (config.limit, config.seed, config.config_file) == (3, 2, "deshpande2023-table12")
    assert grid_from_args(args) == {"instr": ["none", "short", "long"], "shots": [0, 2, 4]}


# --- a bad value: one `error:` line, exit 2, nothing written (the exact lines of today's parser) -----------------

BAD: list[tuple[list[str], str]] = [
    (["--shots", "x"], "argument --shots: invalid int value: 'x'"),
    (["--shots", "0,x"], "--shots: 'x' is not an integer"),
    (["--model", "a,,b"], "--model 'a,,b': empty item in the comma list"),
    (
        ["--dataset", "sick"],
        "unknown dataset 'sick'; choose from csts, stsb, or a dataset file (.toml: docs/extending.md)",
    ),
    (
        ["--dataset", "stsb,sick"],
        "unknown dataset 'sick'; choose from csts, stsb, or a dataset file (.toml: docs/extending.md)",
    ),
    (["--seed", "1,2"], "argument --seed: invalid int value: '1,2'"),
    (
        ["--variant", "pairs"],
        "argument --variant: invalid choice: 'pairs' (choose from 'sentences', 'qa', 'qa-embed', 'case')",
    ),
    (["--shard", "3/2"], "argument --shard: '3/2' is not K/N with 1 <= K <= N (e.g. 2/4)"),
    (["--shard", "0/2"], "argument --shard: '0/2' is not K/N with 1 <= K <= N (e.g. 2/4)"),
    (["--reasoning", "maybe"], "argument --reasoning: invalid choice: 'maybe' (choose from 'auto', 'yes', 'no')"),
    (
        ["--dtype", "int4"],
        "argument --dtype: invalid choice: 'int4' (choose from 'auto', 'float32', 'float16', 'bfloat16')",
    ),
    (["--constrain", "json"], "argument --constrain: invalid choice: 'json' (choose from 'native', 'grammar')"),
    (["--timeout", "soon"], "argument --timeout: invalid float value: 'soon'"),
    (["--limit", "0"], "--limit must be at least 1, got 0"),
    (["--shots", "-1"], "--shots must be 0 or more, got -1"),
    (["--max-tokens", "0"], "--max-tokens must be at least 1, got 0"),
    (["--concurrency", "0"], "--concurrency must be at least 1, got 0"),
    (["--timeout", "0"], "--timeout must be a positive number, got 0.0"),
    (["--rpm", "nan"], "--rpm must be a positive number, got nan"),
    (["--max-cost", "-1"], "--max-cost must be a number 0 or more, got -1.0"),
    (["--wait-for-server", "inf"], "--wait-for-server must be a number 0 or more, got inf"),
    (["--gpu-memory-utilization", "1.5"], "--gpu-memory-utilization must be a share in (0, 1], got 1.5"),
    (["--tensor-parallel", "0"], "--tensor-parallel must be at least 1, got 0"),
    (
        ["--run-id", "a/b"],
        "--run-id 'a/b' must be a plain folder name (no '/' or '\\', not empty, not starting with '.')",
    ),
    (["--stop", ""], "--stop needs a non-empty string"),
    (
        ["--base-url", "127.0.0.1:1/v1"],
        "--base-url '127.0.0.1:1/v1' needs http:// or https:// in front (e.g. http://127.0.0.1:1/v1)",
    ),
    (  # aiohttp refuses credentials in the URL beside the Authorization header: every request failed (issue 41)
        ["--base-url", "http://me:Pw-s3cret@127.0.0.1:1/v1"],
        "--base-url http://127.0.0.1:1/v1: a user:password@ in the address cannot be sent beside the API key's "
        "Authorization header; give a gateway's credential in its query (?api-key=...) or as the API key",
    ),
    (["--parse", "lenient"], "argument --parse: invalid choice: 'lenient' (choose from 'first-number', 'strict')"),
    # Generated from the declarations since issue 33: the option typed without --batch is named, and --batch-wait
    # and --batch-poll share every float's check (nan and inf were taken before)
    (["--batch-wait", "0"], "--batch-wait: the --batch-* options go with --batch"),
    (["--batch-poll", "5"], "--batch-poll: the --batch-* options go with --batch"),
    (["--batch", "--batch-wait", "nan"], "--batch-wait must be a number 0 or more, got nan"),
    (
        ["--batch", "--no-cache"],
        "--batch keeps answers and batch ids in the response cache: it cannot run with --no-cache",
    ),
    (["--batch", "--batch-wait", "-1"], "--batch-wait must be a number 0 or more, got -1.0"),
    (["--batch", "--batch-poll", "0"], "--batch-poll must be a positive number, got 0.0"),
    (["--batch", "--batch-max-requests", "0"], "--batch-max-requests must be at least 1, got 0"),
    (["--case-ffn-dim", "x"], "argument --case-ffn-dim: invalid int value: 'x'"),
    (["--prices", "nope.json"], "price table nope.json does not exist"),
]


@pytest.mark.parametrize(("argv", "line"), BAD, ids=[" ".join(b[0]) for b in BAD])
def test_a_bad_value_is_this_one_line_and_exit_2(
    argv: list[str], line: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    base = ["--model", "overlap", "--dataset", "stsb", "--limit", "2", "--no-progress", "--results-dir", "r"]
    assert main([*base, *argv]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {line}\n" or err.startswith(f"error: {line} (see `run_eval.py --help`)")
    assert err.count("\n") == 1 and list(tmp_path.iterdir()) == []


# --- reannotate takes the run's options it shares with a run, worded and checked as for a run ------------------

REANNOTATE: list[tuple[list[str], str, Any]] = [
    (["--backend", "openai"], "backend", "openai"),
    (["--split", "train"], "split", "train"),
    (["--limit", "4"], "limit", 4),
    (["--max-tokens", "9"], "max_tokens", 9),
    (["--no-chat"], "chat", False),
    (["--think-tags", "none"], "think_tags", "none"),
    (["--data-dir", "d"], "data_dir", Path("d")),
    (["--results-dir", "r"], "results_dir", Path("r")),
    (["--dry-run"], "dry_run", True),
    (["--no-progress"], "progress", False),
    (["--concurrency", "3"], "api.concurrency", 3),
    (["--reasoning", "no"], "api.reasoning", False),
    (["--batch", "--batch-poll", "5"], "api.batch.poll", 5.0),
    (["--dtype", "float16"], "local.dtype", "float16"),
]


def _reannotate(*argv: str) -> RunConfig:
    from harness.cli.declared import build
    from harness.cli.reannotate import reannotate_parser

    config: RunConfig = build(RunConfig, reannotate_parser().parse_args(["--model", "m", "--out", "x.tsv", *argv]))
    return config


@pytest.mark.parametrize(("argv", "field", "value"), REANNOTATE, ids=[" ".join(r[0]) for r in REANNOTATE])
def test_reannotate_takes_the_runs_options_into_its_config(argv: list[str], field: str, value: Any) -> None:
    got = _get(_reannotate(*argv), field)
    assert got == value and type(got) is type(value)


def test_reannotates_defaults_are_a_runs_but_its_own_reply_budget() -> None:
    from harness.variants.reannotate import MAX_TOKENS

    config = _reannotate()
    assert config.max_tokens == MAX_TOKENS != RunConfig.max_tokens
    assert dataclasses.asdict(config) == dataclasses.asdict(RunConfig(model="m", max_tokens=MAX_TOKENS))
