"""Every check of a RunConfig (variants/validate.py `validate_run`, which runs config/validate.py's value checks
first): the same for real runs, dry runs and sweep cells."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from harness.config.settings import ApiOptions, LocalOptions, RunConfig
from harness.config.validate import check_run_id
from harness.types import HarnessError
from harness.variants.validate import scoring_backend, validate_run

BASE = RunConfig(model="overlap", dataset="stsb")


def _with(**changes: Any) -> RunConfig:
    api = {k[4:]: v for k, v in changes.items() if k.startswith("api_")}
    local = {k[6:]: v for k, v in changes.items() if k.startswith("local_")}
    rest = {k: v for k, v in changes.items() if not k.startswith(("api_", "local_"))}
    return dataclasses.replace(BASE, api=ApiOptions(**api), local=LocalOptions(**local), **rest)


FLOATS = [
    ("api_timeout", "--timeout"),
    ("api_max_cost", "--max-cost"),
    ("local_gpu_memory_utilization", "--gpu-memory-utilization"),
]


@pytest.mark.parametrize(("field", "flag"), FLOATS)
@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf"), -1.0])
def test_every_float_option_refuses_nan_inf_and_negatives(field: str, flag: str, value: float) -> None:
    with pytest.raises(HarnessError, match=f"^{flag} must be"):
        validate_run(_with(**{field: value}))


def test_float_options_accept_their_ranges() -> None:
    validate_run(_with(api_timeout=0.5, api_max_cost=0.0, local_gpu_memory_utilization=1.0))
    for bad in (
        _with(api_timeout=0.0),
        _with(local_gpu_memory_utilization=0.0),
        _with(local_gpu_memory_utilization=1.5),
    ):
        with pytest.raises(HarnessError):
            validate_run(bad)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("shots", -1, "--shots must be 0 or more, got -1"),
        ("limit", 0, "--limit must be at least 1, got 0"),
        ("max_tokens", 0, "--max-tokens must be at least 1, got 0"),
        ("api_concurrency", 0, "--concurrency must be at least 1"),
        ("api_max_retries", -1, "--max-retries must be 0 or more"),
        ("api_reasoning_tokens", 0, "--reasoning-tokens must be at least 1"),
        ("local_tensor_parallel", 0, "--tensor-parallel must be at least 1"),
        ("local_data_parallel", 0, "--data-parallel must be at least 1"),
        ("local_max_model_len", 0, "--max-model-len must be at least 1"),
        ("local_batch_size", 0, "--batch-size must be at least 1"),
        ("api_rpm", 0.0, "--rpm must be a positive number"),
        ("api_tpm", float("nan"), "--tpm must be a positive number"),
        ("api_tpm", float("inf"), "--tpm must be a positive number"),
    ],
)
def test_every_count_has_a_floor(field: str, value: int, message: str) -> None:
    with pytest.raises(HarnessError, match=message):
        validate_run(_with(**{field: value}))


@pytest.mark.parametrize("run_id", ["../../x", "a/b", "a\\b", "..", ".", ".hidden", "", " ", "x\0y"])
def test_run_id_must_be_a_plain_folder_name(run_id: str) -> None:
    with pytest.raises(HarnessError, match="must be a plain folder name"):
        check_run_id(run_id)


def test_plain_run_ids_pass() -> None:
    for run_id in ("a", "csts-validation-gpt-4-k4-long-1", "run_2.v3"):
        check_run_id(run_id)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"shot_sampler": "nearest"}, "--shot-sampler"),
        ({"scoring": "expected", "model": "claude-haiku-4-5"}, "--scoring expected needs the first output token's"),
        ({"constrain": "native", "model": "overlap"}, "--constrain: the offline backend cannot"),
        ({"parse": "lenient"}, "unknown --parse 'lenient'"),
        ({"variant": "pairs"}, "unknown variant 'pairs'"),
        ({"stop": ("",)}, "--stop needs a non-empty string"),
    ],
)
def test_choices_and_options_not_yet_available_are_refused(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(HarnessError, match=message):
        validate_run(_with(**changes))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"model": "gpt-4o", "chat": False}, "--no-chat: openai models are chat-only"),
        ({"model": "claude-sonnet-4-6", "chat": False}, "--no-chat: anthropic models are chat-only"),
        ({"model": "m", "backend": "vllm", "stop": ("\n",)}, "--stop: the vllm backend does not send stop sequences"),
        ({"model": "m", "backend": "hf", "stop": ("\n",)}, "--stop: the hf backend does not send stop sequences"),
    ],
)
def test_decoding_options_a_backend_cannot_honour_are_refused(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(HarnessError, match=message):
        validate_run(_with(**changes))


def test_chat_on_a_chat_api_and_anything_on_an_offline_baseline_pass() -> None:
    validate_run(_with(model="gpt-4o", chat=True))
    validate_run(_with(chat=False, stop=("\n",)))  # baselines read the prompt as text; nothing is generated


def test_raw_prompts_to_a_server_and_stop_sequences_on_api_backends_pass() -> None:
    validate_run(_with(model="m", chat=False, api_base_urls=("http://127.0.0.1:9/v1",)))  # /v1/completions
    validate_run(_with(model="gpt-4o", stop=("\n",)))
    validate_run(_with(model="claude-sonnet-4-6", stop=("\n", "Sentence")))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"model": "nosuchmodel"}, "unknown model 'nosuchmodel'"),
        ({"model": "bert", "backend": "offline"}, "offline backend has no model 'bert'"),
        ({"model": "x", "backend": "telepathy"}, "unknown backend 'telepathy'"),
        ({"model": "x", "backend": "sentence-transformers"}, "only embeds text"),
        ({"model": "./no/such/dir", "backend": "hf"}, "no model directory at ./no/such/dir"),
        ({"model": "gpt-4o", "api_max_cost": 1.0, "api_prices": None, "backend": "openai"}, None),
        ({"model": "my-model", "api_max_cost": 1.0, "api_base_urls": ("http://h/v1",)}, "--max-cost needs a price"),
    ],
)
def test_backend_and_model_are_checked_without_building_anything(changes: dict[str, Any], message: str | None) -> None:
    config = _with(**changes)
    if message is None:
        validate_run(config)
        return
    with pytest.raises(HarnessError, match=message):
        validate_run(config)


def test_base_url_with_an_unknown_name_means_the_openai_compatible_backend() -> None:
    assert scoring_backend(_with(model="my-model", api_base_urls=("http://127.0.0.1:8000/v1",))) == "openai"
    assert scoring_backend(_with(model="claude-x", api_base_urls=("http://127.0.0.1:8000/v1",))) == "anthropic"


def test_named_input_files_must_be_regular_files(tmp_path: Path) -> None:
    for field, what in (("answers", "answers file"), ("password_file", "password file"), ("archive", "C-STS archive")):
        with pytest.raises(HarnessError, match=f"{what} .* does not exist"):
            validate_run(_with(**{field: tmp_path / "absent"}, variant="qa", dataset="csts", model="gpt-4o"))
    with pytest.raises(HarnessError, match="price table .* is a directory"):
        validate_run(_with(api_prices=tmp_path))
