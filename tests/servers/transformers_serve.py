"""Start and stop `transformers serve` (transformers' own OpenAI-compatible server) on 127.0.0.1 for tests and
benchmarks. It runs as its own process, exactly as a user would start it, pinned to one model folder.

The CLI entry (`transformers serve`) first asks PyPI whether a newer transformers exists; there is no network
here, so HF_HUB_DISABLE_UPDATE_CHECK and HF_HUB_OFFLINE are set. HF_HOME points at an empty folder of our own:
`/v1/models` scans the hub cache and answers 500 when there is none.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

START_TIMEOUT_S = 240  # loading a 135M model on two busy cores


@dataclass(frozen=True)
class Server:
    base_url: str  # http://127.0.0.1:PORT/v1
    log: Path  # the server's stdout and stderr (uvicorn's access log: one line per request)
    pid: int

    def requests_served(self, endpoint: str) -> int:
        """How many POSTs to `endpoint` (e.g. /v1/chat/completions) the access log shows."""
        return self.log.read_text(errors="replace").count(f'"POST {endpoint} HTTP/1.1" 200')


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def transformers_serve(model_dir: Path, workdir: Path, threads: int | None = None) -> Iterator[Server]:
    """`transformers serve MODEL_DIR` on a free port, float32 on CPU; stopped (its whole process group) on exit."""
    port = free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / f"serve-{port}.log"
    env = os.environ | {
        "HF_HUB_DISABLE_UPDATE_CHECK": "1",
        "HF_HUB_OFFLINE": "1",
        "HF_HOME": str(workdir / "hf-home"),
        "TRANSFORMERS_VERBOSITY": "error",
    }
    (workdir / "hf-home" / "hub").mkdir(parents=True, exist_ok=True)
    if threads is not None:
        env["OMP_NUM_THREADS"] = str(threads)
    command = [
        sys.executable, "-m", "transformers.cli.transformers", "serve", str(model_dir),
        "--host", "127.0.0.1", "--port", str(port), "--device", "cpu", "--dtype", "float32",
    ]  # fmt: skip
    with serving(command, env, port, log, "transformers serve", START_TIMEOUT_S) as server:
        yield server


@contextlib.contextmanager
def serving(
    command: list[str], env: dict[str, str], port: int, log: Path, name: str, timeout_s: float
) -> Iterator[Server]:
    """Any OpenAI-compatible server `command` listening on `port`: its output in `log`, healthy before it is
    yielded, stopped (its whole process group) on exit."""
    with open(log, "wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        wait_healthy(port, process, log, name, timeout_s)
        yield Server(f"http://127.0.0.1:{port}/v1", log, process.pid)
    finally:
        _stop(process)


def wait_healthy(port: int, process: subprocess.Popen[bytes], log: Path, name: str, timeout_s: float) -> None:
    """Until the server at `port` answers /health with 200; its log's tail in the error if it exits first.
    `name`: the server, as the error names it (also used by tests/servers/vllm_serve.py)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"{name} exited with {process.returncode}:\n{tail}")
        with contextlib.suppress(OSError), urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
            if r.status == 200:
                return
        time.sleep(0.5)
    raise RuntimeError(f"{name} did not answer /health within {timeout_s:.0f} s (log: {log})")


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the server's own process group, SIGKILL if it lingers; never anything else."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=15)
