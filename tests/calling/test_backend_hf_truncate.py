"""--truncate-input: the reference code's `truncation=True` for the T5 family (run_sts_fewshot.py), on real transformers
with a tiny T5 saved to disk; only the hf backend truncates, and `paper` is 512 for the T5 family alone."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

pytest.importorskip("torch", reason='the hf extra is not installed: pip install -e ".[hf]"')
pytest.importorskip("transformers", reason='the hf extra is not installed: pip install -e ".[hf]"')

from harness.calling.backends.hf import HFBackend
from harness.cli.main import main
from harness.config.settings import LocalOptions
from harness.types import Request
from tests.tiny_models import save_tiny_t5, shared

LONG = "Input: Sentence 1: a red fox runs past the river" + " and the hill" * 40 + ". Output:"


@pytest.fixture(scope="module")
def t5_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shared(save_tiny_t5, tmp_path_factory)


def test_a_prompt_is_cut_as_the_reference_codes_tokenizer_cuts_it(t5_dir: Path) -> None:
    from transformers import AutoTokenizer

    backend = HFBackend(str(t5_dir), LocalOptions(), truncate=12)
    (item,) = backend.tokenize([Request("0", LONG)])
    reference = AutoTokenizer.from_pretrained(str(t5_dir))(LONG, truncation=True, max_length=12)["input_ids"]
    assert item.ids == list(reference) and len(item.ids) == 12
    assert item.ids[-1] == backend.load().tokenizer.eos_token_id  # T5 keeps its </s> at the cut
    (whole,) = HFBackend(str(t5_dir), LocalOptions()).tokenize([Request("0", LONG)])
    assert len(whole.ids) > 12 and item.ids[:11] == whole.ids[:11]

    async def answer() -> list:
        return [c async for c in backend.complete([Request("0", LONG)])]

    (done,) = asyncio.run(answer())
    assert done.error is None and done.usage is not None and done.usage.input_tokens == 12
    assert backend.describe()["truncate_input"] == 12


def test_a_cli_run_records_the_cut(t5_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--backend", "hf", "--model", str(t5_dir), "--dataset", "stsb", "--limit", "3", "--template", "paper"]
    argv += ["--shots", "4", "--instr", "long", "--truncate-input", "paper", "--no-progress"]
    assert main([*argv, "--results-dir", str(tmp_path), "--run-id", "cut"]) == 0, capsys.readouterr().err
    config = json.loads((tmp_path / "cut" / "config.json").read_text())
    assert (config["template"], config["backend_params"]["truncate_input"]) == ("stsb/t5-long.j2", 512)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--model", "gpt-4-0314", "--truncate-input", "512"], "error: --truncate-input: only the hf backend"),
        (["--model", "overlap", "--truncate-input", "all"], "error: --truncate-input: 'all' is neither"),
    ],
)
def test_truncation_elsewhere_is_one_error_line(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*argv, "--dataset", "stsb", "--dry-run", "--results-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1
    assert not any(tmp_path.iterdir())
