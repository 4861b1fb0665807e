"""The first minutes with a local model say what they do (issue 34): the one-time GGUF conversion is announced and
timed, loading is said before the bar's first move (which waits for a batch), and --no-progress hides
transformers' own "Loading weights" bar as well as ours."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.calling.backends import local_models
from tests.real_model import MODEL, requires_smollm2

pytest.importorskip("torch", reason='the hf extra is not installed: pip install -e ".[hf]"')
pytest.importorskip("transformers", reason='the hf extra is not installed: pip install -e ".[hf]"')

ROOT = Path(__file__).resolve().parents[2]
# slow: each test starts run_eval.py processes that load torch and a model (20 s a test on two cores).
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.tiny_models import save_tiny_gpt2

    return save_tiny_gpt2(tmp_path_factory.mktemp("tiny") / "gpt2")


def run(tiny: Path, results: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    argv = ["--backend", "hf", "--model", str(tiny), "--dataset", "stsb", "--limit", "4", "--no-cache",
            "--results-dir", str(results), *extra]  # fmt: skip
    return subprocess.run(
        [sys.executable, str(ROOT / "run_eval.py"), *argv], env=os.environ | {"PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, timeout=600, check=True,
    )  # fmt: skip


def test_no_progress_shows_no_bar_at_all_not_even_transformers_own(tiny: Path, tmp_path: Path) -> None:
    assert run(tiny, tmp_path, "--no-progress").stderr == ""


def test_loading_is_said_before_the_first_batch_moves_the_bar(tiny: Path, tmp_path: Path) -> None:
    import torch

    from harness.calling.backends.hf import START_BATCH_CPU, START_BATCH_GPU

    gpu = torch.cuda.is_available()  # the run says which it loads onto, and starts its batches at that one's size
    err = run(tiny, tmp_path).stderr
    assert err.startswith(f"loading {tiny} with transformers ({'GPU' if gpu else 'CPU'}) ...\n")
    batch = START_BATCH_GPU if gpu else START_BATCH_CPU
    said = rf"^loaded in \d+ s; generating in batches of {batch} \(the bar moves as each batch finishes\)$"
    loaded = re.search(said, err, re.M)
    assert loaded is not None
    first_move = err.find("4/4")
    assert first_move == -1 or loaded.start() < first_move  # the bar shows only after 2 s: a quick run has none


@requires_smollm2
def test_the_first_use_conversion_is_announced_and_timed_and_a_reuse_is_silent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def convert(source: Path, out: Path) -> None:  # the conversion itself: tests/calling/test_real_model.py
        (out / "config.json").write_text("{}")

    monkeypatch.setattr(local_models, "convert_gguf", convert)
    said: list[str] = []
    folder = local_models.model_dir(MODEL, root=tmp_path, log=said.append)
    size = local_models.gguf_path(local_models.KNOWN_MODELS[MODEL]).stat().st_size / 2**20
    assert said[0] == (
        f"first use of {MODEL}: converting its GGUF weights ({size:.0f} MiB) into a transformers folder at "
        f"{folder}, once (about 2 minutes on a busy 2-core machine) ..."
    )
    assert re.fullmatch(r"converted in \d+ s; later runs reuse it", said[1]) and len(said) == 2
    assert local_models.model_dir(MODEL, root=tmp_path, log=said.append) == folder and len(said) == 2
