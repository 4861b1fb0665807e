"""The CASE projection (Zhang et al. 2025, §3.2, §4, Table 7): seeded training, the kept epoch, the saved weights
and their hash; end to end through /v1/embeddings (tests/fake_server.py) to a C-STS test submission file."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import spearmanr

from harness.cli.main import main
from harness.datasets.choose import load_dataset
from harness.variants.case_ffn import Pairs, project_cosines, train
from tests.fake_server import FakeServer


def synthetic(n: int, seed: int) -> Pairs:
    """Ratings that depend only on the first 4 of 24 dimensions; the other 8 are loud noise, so raw cosines
    rank pairs poorly and a learnt projection that drops the noise ranks them well."""
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((n, 12)), rng.standard_normal((n, 12))
    a[:, 4:] *= 2.0
    b[:, 4:] *= 2.0
    signal = np.sum(a[:, :4] * b[:, :4], axis=1) / (np.linalg.norm(a[:, :4], axis=1) * np.linalg.norm(b[:, :4], axis=1))
    return Pairs(a, b, 1 + 2 * (signal + 1))  # on 1-5


@pytest.mark.parametrize("kind", ["linear", "nonlinear"])
def test_training_is_seeded_and_learns_what_raw_cosines_miss(kind: str) -> None:
    tr, val = synthetic(1500, 0), synthetic(300, 1)
    first = train(kind, tr, val, (1.0, 5.0), 8, 20, seed=7)
    again = train(kind, tr, val, (1.0, 5.0), 8, 20, seed=7)
    other = train(kind, tr, val, (1.0, 5.0), 8, 20, seed=8)
    assert first.sha256 == again.sha256 == hashlib.sha256(first.weights).hexdigest()
    assert other.sha256 != first.sha256
    assert first.val_spearman == max(v for v in first.curve if v is not None)
    assert first.curve[first.best_epoch - 1] == first.val_spearman
    raw = [float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y))) for x, y in zip(val.a, val.b, strict=True)]
    projected = project_cosines(first, val.a, val.b)
    assert 100 * spearmanr(projected, val.labels).statistic == pytest.approx(first.val_spearman)
    if kind == "linear":  # lr 1e-3 over 60 steps: the linear map has started dropping the noise dimensions
        assert first.val_spearman > 100 * spearmanr(raw, val.labels).statistic + 5
    assert first.n_params == 12 * 8  # no bias: eqs. 3 and 4


def test_saved_weights_reproduce_the_predictions_outside_the_harness() -> None:
    from safetensors.numpy import load

    tr, val = synthetic(300, 2), synthetic(100, 3)
    trained = train("nonlinear", tr, val, (1.0, 5.0), 6, 5, seed=1)
    weights = load(trained.weights)
    w = weights["0.weight"]

    def g(x: np.ndarray) -> np.ndarray:  # eq. 4 at inference: LeakyReLU(W x), dropout off
        z = x @ w.T.astype(float)
        return np.where(z > 0, z, 0.01 * z)

    za, zb = g(val.a), g(val.b)
    expected = np.sum(za * zb, axis=1) / (np.linalg.norm(za, axis=1) * np.linalg.norm(zb, axis=1))
    assert np.max(np.abs(project_cosines(trained, val.a, val.b) - expected)) < 1e-5


def test_a_test_split_run_writes_the_submission_and_the_weights_with_their_hash(csts_dir: Path, tmp_path: Path) -> None:
    argv = ["--variant", "case", "--backend", "openai", "--model", "text-embedding-3-small", "--data-dir",
            str(csts_dir), "--results-dir", str(tmp_path), "--run-id", "f", "--base-url", "", "--no-progress",
            "--split", "test", "--case-ffn", "linear", "--case-ffn-epochs", "4", "--seed", "3"]  # fmt: skip
    with FakeServer() as server:
        argv[argv.index("--base-url") + 1] = server.openai_url
        assert main(argv) == 0
    run = tmp_path / "f"
    metrics = json.loads((run / "metrics.json").read_text())
    ffn = metrics["case"]["ffn"]
    weights = (run / "ffn-linear.safetensors").read_bytes()
    assert ffn["weights_sha256"] == hashlib.sha256(weights).hexdigest() and ffn["seed"] == 3
    manifest = json.loads((run / "manifest.json").read_text())
    assert json.dumps(manifest).count(ffn["weights_sha256"]) == 1
    submission = json.loads((run / "test_predictions.json").read_text())
    samples = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
    sizes = {
        split: len(load_dataset("csts", split, data_dir=csts_dir).examples) for split in ("train", "validation", "test")
    }
    assert submission == {s["id"]: s["prediction"] for s in samples} and len(submission) == sizes["test"]
    assert (ffn["n_train"], ffn["n_validation"]) == (sizes["train"], sizes["validation"]) and 1 <= ffn[
        "best_epoch"
    ] <= 4
