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
    (["--shot-sampler", "reference"], "shot_sampler", "reference"),
    (["--shot-seed", "11"], "shot_seed", 11),
    (["--scoring", "expected"], "scoring", "expected"),
    (["--parse", "strict"], "parse", "strict"),
    (["--constrain"], "constrain", "native"),
    (["--constrain", "grammar"], "constrain", "grammar"),
    (["--think-tags", "none"], "think_tags", "none"),
    (["--wait-for-server", "30"], "api.wait_for_server", 30.0),
    (["--max-reply-mb", "64"], "api.max_reply_mb", 64.0),
    (["--truncate-input", "512"], "truncate_input", "512"),
    (["--shard", "2/3"], "shard", (2, 3)),
    (["--case-setting", "sent-c"], "embed.setting", "sent-c"),
    (["--case-inputs", "concat"], "embed.inputs", "concat"),
    (["--case-ffn", "linear"], "embed.ffn", "linear"),
    (["--case-ffn-dim", "64"], "embed.ffn_dim", 64),
    (["--case-ffn-epochs", "7"], "embed.ffn_epochs", 7),
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
