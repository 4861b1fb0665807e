"""The hf backend says why a reply ended (finish_reason), as the API backends do, so `cut-off` can be told from
`no-number`: real transformers generating with a tiny random GPT-2 (tests/tiny_models.py)."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("torch", reason='the hf extra is not installed: pip install -e ".[hf]"')
pytest.importorskip("transformers", reason='the hf extra is not installed: pip install -e ".[hf]"')

from harness.calling.backends.hf import HFBackend
from harness.cli.main import main
from harness.config.settings import LocalOptions
from harness.types import Completion, Request
from tests.tiny_models import save_tiny_gpt2, shared


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shared(save_tiny_gpt2, tmp_path_factory)


def complete(model_dir: Path, requests: list[Request]) -> dict[str, Completion]:
    backend = HFBackend(str(model_dir), LocalOptions(batch_size=4))

    async def collect() -> list[Completion]:
        return [c async for c in backend.complete(requests)]

    return {c.request_id: c for c in asyncio.run(collect())}


def test_a_reply_that_uses_its_whole_budget_is_length_and_one_that_ends_is_stop(gpt2_dir: Path, tmp_path: Path) -> None:
    requests = [Request(str(i), f"Input: Sentence 1: a red fox{' runs' * i}. Output:", max_tokens=6) for i in range(4)]
    first = complete(gpt2_dir, requests)
    # An untrained model rambles: every reply runs to its 6 tokens and none says end-of-sequence.
    assert {c.usage.output_tokens for c in first.values()} == {6}  # type: ignore[union-attr]
    assert {c.finish_reason for c in first.values()} == {"length"}
    # The same model told (generation_config.json) that the token it says second for request 0 ends a reply.
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(gpt2_dir)
    second = tok(first["0"].text)["input_ids"][1]
    ends = tmp_path / "ends"
    shutil.copytree(gpt2_dir, ends)
    config = json.loads((ends / "generation_config.json").read_text())
    config["eos_token_id"] = [tok.eos_token_id, second]
    (ends / "generation_config.json").write_text(json.dumps(config))
    again = complete(ends, requests)
    assert again["0"].usage.output_tokens == 2  # type: ignore[union-attr]
    assert again["0"].finish_reason == "stop"
    for c in again.values():  # each either ended early (stop) or used all 6 tokens (length)
        expected = "stop" if c.usage.output_tokens < 6 else "length"  # type: ignore[union-attr]
        assert c.finish_reason == expected


def test_a_run_records_finish_reason_and_scores_a_budget_used_up_without_a_number_as_cut_off(
    gpt2_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--backend", "hf", "--model", str(gpt2_dir), "--dataset", "stsb", "--limit", "8", "--batch-size", "4"]
    assert main([*argv, "--results-dir", str(tmp_path), "--run-id", "tiny", "--no-progress"]) == 0, capsys.readouterr()
    samples = [json.loads(line) for line in (tmp_path / "tiny" / "samples.jsonl").read_text().splitlines()]
    assert {s["finish_reason"] for s in samples} == {"length"}  # 20 tokens of rambling each
    no_number = [s for s in samples if not s["valid"]]
    assert no_number and {s["reason"] for s in no_number} == {"cut-off"}
