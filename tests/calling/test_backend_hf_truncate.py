"""--truncate-input: the reference code's `truncation=True` for the T5 family (run_sts_fewshot.py), on real transformers
with a tiny T5 saved to disk; only the hf backend truncates, and `paper` is, for the T5 family alone, the tokenizer's
own model_max_length, recorded with the tokenizer's revision."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("torch", reason='the hf extra is not installed: pip install -e ".[hf]"')
pytest.importorskip("transformers", reason='the hf extra is not installed: pip install -e ".[hf]"')

from harness.calling.backends import BACKENDS
from harness.calling.backends.hf import HFBackend, from_config
from harness.cli.main import main
from harness.config.settings import LocalOptions, RunConfig
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


REVISION = "0123456789abcdef0123456789abcdef01234567"


def _with_limit(t5_dir: Path, folder: Path, limit: int | None) -> Path:
    """The tiny T5 copied into `folder` with its tokenizer saying `limit` (None: no limit stated, as the tiny one)."""
    shutil.copytree(t5_dir, folder)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config.pop("model_max_length", None)
    if limit is not None:
        config["model_max_length"] = limit
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    return folder


@pytest.mark.parametrize(("limit", "cut"), [(512, 512), (2048, 2048), (None, None)])
def test_a_cli_run_records_the_cut(
    limit: int | None, cut: int | None, t5_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `paper` is the tokenizer's own model_max_length, what truncation=True cuts at (Flan-UL2's: 512, now 2048);
    # a tokenizer that states none is not cut, as the reference code's was not
    model = _with_limit(t5_dir, tmp_path / "t5", limit)
    argv = ["--backend", "hf", "--model", str(model), "--dataset", "stsb", "--limit", "3", "--template", "paper"]
    argv += ["--shots", "4", "--instr", "long", "--truncate-input", "paper", "--no-progress"]
    assert main([*argv, "--results-dir", str(tmp_path), "--run-id", "cut"]) == 0, capsys.readouterr().err
    config = json.loads((tmp_path / "cut" / "config.json").read_text())
    params = config["backend_params"]
    assert (config["template"], params.get("truncate_input")) == ("stsb/t5-long.j2", cut)
    assert params["tokenizer"] == {"model_max_length": limit, "revision": None}  # a plain folder has no revision


def test_paper_cuts_at_the_tokenizers_limit_and_records_its_revision(t5_dir: Path, tmp_path: Path) -> None:
    # A hub snapshot (how the cache holds google/flan-ul2): its commit is the tokenizer's revision. Before, `paper`
    # cut every T5-family model at 512 whatever its tokenizer said, and recorded no revision.
    snapshot = _with_limit(t5_dir, tmp_path / "models--google--flan-ul2" / "snapshots" / REVISION, 24)
    backend = from_config(RunConfig(model=str(snapshot), backend="hf", truncate_input="paper"), BACKENDS["hf"])
    (item,) = backend.tokenize([Request("0", LONG)])
    assert len(item.ids) == 24 and item.ids[-1] == backend.load().tokenizer.eos_token_id
    params = backend.describe()
    assert (params["truncate_input"], params["tokenizer"]) == (24, {"model_max_length": 24, "revision": REVISION})
    plain = from_config(RunConfig(model=str(snapshot), backend="hf", truncate_input="12"), BACKENDS["hf"]).describe()
    assert plain["truncate_input"] == 12 and "tokenizer" not in plain  # a number asked for is kept as asked


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
