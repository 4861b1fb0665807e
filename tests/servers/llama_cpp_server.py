"""Start and stop llama.cpp's OpenAI-compatible server (llama-cpp-python's `[server]` extra,
`python -m llama_cpp.server`) on 127.0.0.1 for tests and benchmarks, serving a GGUF file as a user would.

llama-cpp-python has no wheel on PyPI: it compiles llama.cpp on install (about 25 minutes on two cores), so tests
that need it skip with a reason when `llama_cpp` is not importable (see `requires_llama_cpp`).
"""

from __future__ import annotations

import contextlib
import importlib.util
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.servers.transformers_serve import Server, _stop, free_port

START_TIMEOUT_S = 120
ALIAS = "smollm2-135m-q4_1"  # the model id the server lists and answers to
HINT = (
    "llama-cpp-python is not installed (no wheel on PyPI; it compiles for ~25 min): "
    "pip install 'llama-cpp-python[server]' (or a wheel built once: pip install WHEEL 'sse-starlette' "
    "'starlette-context' 'pydantic-settings')"
)
requires_llama_cpp = pytest.mark.skipif(
    not all(importlib.util.find_spec(m) for m in ("llama_cpp", "sse_starlette", "starlette_context")), reason=HINT
)


@contextlib.contextmanager
def llama_cpp_server(gguf: Path, workdir: Path, threads: int = 1, n_ctx: int = 2048) -> Iterator[Server]:
    """`python -m llama_cpp.server --model GGUF` on a free port (logits kept for log-probabilities); stopped on exit.
    One thread by default: llama.cpp's threads spin while they wait, which on a shared, loaded machine costs far more
    than the second core gives."""
    port = free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / f"llama-{port}.log"
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", ALIAS,
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx), "--n_threads", str(threads),
        "--logits_all", "True",
    ]  # fmt: skip
    with open(log, "wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if process.poll() is not None:
                tail = log.read_text(errors="replace")[-2000:]
                raise RuntimeError(f"llama_cpp.server exited with {process.returncode}:\n{tail}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"llama_cpp.server did not answer within {START_TIMEOUT_S} s (log: {log})")
            time.sleep(0.5)
        yield Server(f"http://127.0.0.1:{port}/v1", log, process.pid)
    finally:
        _stop(process)
