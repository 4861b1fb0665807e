"""kill -9 at every stage of --batch, then the same command again: nothing is submitted twice.

run_eval.py runs in a subprocess against tests/fake_batch_server.py; the server stalls at a stage (the
upload, the create reply, a result download) or reports it reached one (polling), and the test kills the
process there with SIGKILL. Each rerun must resume: the server sees every request in exactly one batch,
answers it once, and the finished run equals the expected answers.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.calling.batch.store import BatchStore
from harness.calling.cache import ResponseCache
from tests.calling.test_batch_run import args, run_dirs, samples
from tests.conftest import ROOT
from tests.fake_batch_server import FakeBatchServer
from tests.fake_server import default_answer


def start(server: FakeBatchServer, kind: str, results: Path) -> subprocess.Popen[bytes]:
    for event in server.events.values():
        event.clear()
    argv = args(server, kind, results, "--batch", "--batch-poll", "0.05", "--timeout", "60")
    env = os.environ | {"PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}
    log = (results.parent / "log.txt").open("ab")
    return subprocess.Popen([sys.executable, str(ROOT / "run_eval.py"), *argv], env=env, stdout=log, stderr=log)


def kill_at(proc: subprocess.Popen[bytes], server: FakeBatchServer, stage: str, settle: float = 0.3) -> None:
    assert server.events[stage].wait(60), f"the run never reached {stage}"
    time.sleep(settle)  # let the client get as far into the stage as it will
    assert proc.poll() is None, "the run ended before it could be killed"
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(10) == -signal.SIGKILL


def stages(results: Path) -> list[str]:
    path = results / "cache.sqlite"
    return [r.stage for r in BatchStore(path).rows()] if path.exists() else []


@pytest.mark.slow  # a run_eval.py process killed at each stage and started again: half a minute a provider
@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_kill_9_at_every_stage_then_rerun_submits_each_request_once(kind: str, tmp_path: Path) -> None:
    results = tmp_path / "res"
    results.mkdir()
    # Still running when polled after the kills, however slow the machine: it is ended on purpose below.
    with FakeBatchServer(batch_delay=600.0) as server:
        if kind == "openai":  # Anthropic has no upload step: the requests travel in the create call
            server.hang = {"upload"}
            kill_at(start(server, kind, results), server, "upload")
            assert server.batches == {} and stages(results) == ["planned"]

        # Killed while the create call is out: the provider made the batch, the run never heard its id.
        server.hang = {"create"}
        kill_at(start(server, kind, results), server, "created")
        assert len(server.batches) == 1 and stages(results) == ["creating"]

        # The rerun finds that batch at the provider (no second create) and polls it; killed while polling.
        kill_at(start(server, kind, results), server, "retrieved")
        assert len(server.batches) == 1 and stages(results) == ["submitted"]

        # Killed halfway through reading the results: what was read is in the cache already. The batch now ends
        # in 2 s, so that the next run finds it done and downloads.
        for batch in server.batches.values():
            batch.delay = time.time() - batch.created + 2.0
        server.hang = {"download"}
        kill_at(start(server, kind, results), server, "download", settle=1.0)
        cached = len(ResponseCache(results / "cache.sqlite"))
        assert 0 < cached < 20 and stages(results) == ["submitted"]
        # Nothing written: a killed run leaves at most its empty claimed folder (the next run removes it,
        # harness/results/claims.py).
        assert [d for d in run_dirs(results) if any(d.iterdir())] == []

        proc = start(server, kind, results)
        assert proc.wait(120) == 0, (tmp_path / "log.txt").read_text()
    assert len(server.batches) == 1 and server.calls == []  # one batch, nothing sent one by one
    assert set(server.submitted.values()) == {1} and len(server.submitted) == 20
    assert set(server.batch_answered.values()) == {1}
    assert server.downloads >= 2 and stages(results) == ["collected"]
    (run,) = run_dirs(results)
    assert all(s["error"] is None and s["output"] == default_answer(s["prompt"]) for s in samples(run).values())
