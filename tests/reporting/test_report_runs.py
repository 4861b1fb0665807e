"""Run folders read back: identity settings with their old defaults, reason codes, folders of runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.results.read import OLD_DEFAULTS, expand, reason_of, setting
from harness.types import HarnessError
from tests.synthetic_runs import make_run

OLD_OPENAI = {
    "backend": "openai",
    "backend_params": {"sent": {"max_tokens": 20}},
    "settings": {"local": {"chat": False}},
}
OLD_HF = {"backend": "hf", "backend_params": {"chat_template": False}, "settings": {"local": {"chat": False}}}


@pytest.mark.parametrize(
    ("config", "name", "value"),
    [
        (OLD_OPENAI, "chat", True),  # API backends always sent one chat message before --chat/--no-chat
        (OLD_HF, "chat", False),
        (OLD_HF | {"backend_params": {"chat_template": True}}, "chat", True),
        ({"backend": "vllm", "settings": {"local": {"chat": True}}}, "chat", True),
        (OLD_OPENAI | {"chat": False}, "chat", False),  # a newer config.json says so itself
        (OLD_OPENAI | {"settings": {"chat": False}}, "chat", False),
        (OLD_OPENAI | {"settings": {"chat": None}}, "chat", True),  # None: the backend's default
        # the backend's default for an OpenAI-compatible server is raw text: its backend_params say so
        (OLD_OPENAI | {"settings": {"chat": None}, "backend_params": {"chat": False}}, "chat", False),
        ({"settings": {"stop": []}}, "stop", None),
        ({"stop": ["\n"]}, "stop", ["\n"]),
        ({"limit": None, "settings": {"limit": None}}, "limit", None),
        (OLD_OPENAI, "max_tokens", 20),
        ({"backend_params": {"sent": {"max_completion_tokens": 2048}}}, "max_tokens", 2048),
        (OLD_OPENAI | {"max_tokens": 5}, "max_tokens", 5),
        ({"template": "csts/t5-long.j2"}, "template", "t5-long"),
        ({}, "scoring", OLD_DEFAULTS["scoring"]),
        ({}, "parse", OLD_DEFAULTS["parse"]),
        ({}, "stop", None),
        ({}, "shot_sampler", OLD_DEFAULTS["shot_sampler"]),
        ({"scoring": "expected"}, "scoring", "expected"),
    ],
)
def test_settings_missing_from_an_old_config_take_their_old_default(
    config: dict[str, Any], name: str, value: object
) -> None:
    assert setting(config, name) == value


@pytest.mark.parametrize(
    ("record", "reason"),
    [
        ({"valid": True, "parsed": 3.0, "prediction": 3.0}, "number"),
        ({"valid": True, "parsed": 7.0, "prediction": 7.0}, "out-of-range"),
        ({"valid": False, "parsed": None, "prediction": 2.4}, "no-number"),
        ({"valid": False, "parsed": None, "prediction": None, "error": "HTTP 500"}, "error"),
        ({"valid": False, "parsed": None, "prediction": None}, None),  # a dry run: nothing asked
        ({"valid": True, "parsed": 1.0, "prediction": 1.0, "reason": "echo"}, "echo"),  # written by a newer runner
    ],
)
def test_reason_codes(record: dict[str, Any], reason: str | None) -> None:
    assert reason_of(record, (1.0, 5.0)) == reason


def test_a_folder_of_runs_and_sweeps_expands_to_each_run_once(tmp_path: Path) -> None:
    results = tmp_path / "results"
    b, a = make_run(results, "b"), make_run(results, "a")
    assert expand([results, a]) == [a, b]
    (tmp_path / "empty").mkdir()
    with pytest.raises(HarnessError, match="neither a run folder"):
        expand([tmp_path / "empty"])
    with pytest.raises(HarnessError, match="missing does not exist"):
        expand([tmp_path / "missing"])
