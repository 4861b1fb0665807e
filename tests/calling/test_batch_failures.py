"""--batch when not everything goes well: per-request errors, expired and cancelled batches, --batch-wait 0,
progress while waiting, and `run_eval.py batches`. Real SDKs against tests/fake_batch_server.py."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import pytest
from anthropic import AsyncAnthropic
from openai import AsyncOpenAI

from harness.calling.cache import ResponseCache
from harness.cli.main import main
from tests.calling.test_batch_run import BATCH, KINDS, args, metrics, run_dirs, samples
from tests.fake_batch_server import FakeBatchServer
from tests.fake_server import default_answer


@pytest.mark.parametrize("kind", KINDS)
def test_per_request_errors_are_those_requests_errors_and_a_rerun_retries_only_them(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad: set[str] = set()

    def plan(prompt: str, attempt: int) -> str:
        if len(bad) < 3 and prompt not in bad and attempt == 0:
            bad.add(prompt)
        return "400" if prompt in bad and attempt == 0 else "ok"

    with FakeBatchServer(batch_delay=0.1, plan=plan) as server:
        assert main(args(server, kind, tmp_path, *BATCH)) == 3  # written, but 3 requests failed
        first = run_dirs(tmp_path)[-1]
        failed = {s["prompt"]: s["error"] for s in samples(first).values() if s["error"]}
        assert set(failed) == bad and all("request failed inside the batch (400)" in e for e in failed.values())
        assert metrics(first)["errors"] == 3 and all(
            s["prediction"] is None for s in samples(first).values() if s["error"]
        )
        assert main(args(server, kind, tmp_path, *BATCH)) == 0
    second = run_dirs(tmp_path)[-1]
    assert len(server.batches) == 2 and len(list(server.batches.values())[1].items) == 3
    assert {p: n for p, n in server.submitted.items() if n > 1} == dict.fromkeys(bad, 2)
    assert metrics(second)["cache"] == {"mode": "on", "hits": 17, "misses": 3}
    assert all(s["output"] == default_answer(s["prompt"]) for s in samples(second).values())
    assert "rerun the same command" in capsys.readouterr().err


@pytest.mark.parametrize("kind", KINDS)
def test_an_expired_batch_keeps_what_it_finished(kind: str, tmp_path: Path) -> None:
    with FakeBatchServer(batch_delay=2.0, expire_after=0.7) as server:
        assert main(args(server, kind, tmp_path, *BATCH)) == 3
        finished = sum(server.batch_answered.values())
        assert 0 < finished < 20
        first = run_dirs(tmp_path)[-1]
        answered = [s for s in samples(first).values() if s["error"] is None]
        assert len(answered) == finished == len(ResponseCache(tmp_path / "cache.sqlite"))
        assert all(s["output"] == default_answer(s["prompt"]) for s in answered)
        assert all("expired" in s["error"] for s in samples(first).values() if s["error"])
        assert main(["batches", "--results-dir", str(tmp_path)]) == 0
        server.expire_after = None
        assert main(args(server, kind, tmp_path, *BATCH)) == 0
    second = run_dirs(tmp_path)[-1]
    _, second_batch = server.batches.values()
    assert len(second_batch.items) == 20 - finished  # the rerun sent only what expired
    assert set(server.batch_answered.values()) == {1} and len(server.batch_answered) == 20  # each answered once
    assert metrics(second)["cache"]["hits"] == finished


def test_cancelled_batch_keeps_its_finished_part_and_batch_wait_0_exits_4(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 30 s for the batch, a request every 1.5 s: the cancel lands after the first is done and long before the last,
    # however long a busy machine takes over the commands before it (1.5 s in all ended it first on one).
    with FakeBatchServer(batch_delay=30) as server:
        assert main(args(server, "openai", tmp_path, *BATCH, "--batch-wait", "0")) == 4
        err = capsys.readouterr().err
        assert "batches pending: 20 requests in 1 batches are still running" in err and "rerun" in err
        assert run_dirs(tmp_path) == []  # nothing written yet
        (batch_id,) = server.batches
        assert main(["batches", "--results-dir", str(tmp_path)]) == 0
        assert re.search(rf"pending\s+openai\s+gpt-4o-mini\s+{batch_id}", capsys.readouterr().out)

        async def cancel() -> None:  # the user cancels it in the provider's console, once a request is done
            await asyncio.sleep(max(0.0, server.batches[batch_id].due(0) - time.time()) + 0.1)
            async with AsyncOpenAI(api_key="k", base_url=server.openai_url) as client:
                await client.batches.cancel(batch_id)

        asyncio.run(cancel())
        assert main(args(server, "openai", tmp_path, *BATCH)) == 3
    run = run_dirs(tmp_path)[-1]
    done = [s for s in samples(run).values() if s["error"] is None]
    assert 0 < len(done) == sum(server.batch_answered.values()) < 20
    assert all("cancelled" in s["error"] for s in samples(run).values() if s["error"])
    assert main(["batches", "--results-dir", str(tmp_path)]) == 0
    assert "1 batches: 1 cancelled" in capsys.readouterr().out


def test_anthropic_batch_wait_then_resume_submits_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeBatchServer(batch_delay=0.5) as server:
        assert main(args(server, "anthropic", tmp_path, *BATCH, "--batch-wait", "0.1")) == 4
        # On a busy machine the 0.5 s batch may have ended by now: then this run collects it and writes its folder.
        second = main(args(server, "anthropic", tmp_path, *BATCH, "--batch-wait", "0"))
        assert second in (0, 4)
        assert main(args(server, "anthropic", tmp_path, *BATCH)) == 0

        async def listed() -> list[str]:
            async with AsyncAnthropic(api_key="k", base_url=server.anthropic_url) as client:
                return [b.id async for b in client.messages.batches.list()]

        assert len(asyncio.run(listed())) == 1
    assert set(server.submitted.values()) == {1} and len(server.submitted) == 20
    assert len(run_dirs(tmp_path)) == (2 if second == 0 else 1)  # one folder per run that finished


def test_progress_shows_status_counts_elapsed_and_next_poll(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeBatchServer(batch_delay=0.6) as server:
        argv = [a for a in args(server, "openai", tmp_path, "--batch", "--batch-poll", "0.2") if a != "--no-progress"]
        assert main(argv) == 0
    err = capsys.readouterr().err
    assert re.search(r"submitted batch_\d+ \(20 requests\)", err)
    assert re.search(
        r"batch openai batch_\d+ \[1/1\]: in_progress, \d+/20 done, 0 failed; 0:\d\d:\d\d since submission", err
    )
    assert re.search(r"batch: 1 still running, waited 0:\d\d:\d\d; next poll in 0.2s", err)
    assert re.search(r"completed, 20/20 done, 0 failed; 0:\d\d:\d\d since submission; results collected", err)


def test_a_batch_the_provider_no_longer_knows_is_resubmitted_by_the_next_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeBatchServer(batch_delay=30) as server:
        assert main(args(server, "openai", tmp_path, *BATCH, "--batch-wait", "0")) == 4
        server.batches.clear()  # gone: another organisation's key, or deleted in the console
        assert main(args(server, "openai", tmp_path, *BATCH)) == 2  # nothing came back: one line, nothing written
        assert "No such batch" in capsys.readouterr().err and run_dirs(tmp_path) == []
        assert main(["batches", "--results-dir", str(tmp_path)]) == 0
        assert "1 batches: 1 missing" in capsys.readouterr().out
        server.batch_delay = 0.1
        assert main(args(server, "openai", tmp_path, *BATCH)) == 0
    assert len(server.batches) == 1 and len(run_dirs(tmp_path)) == 1


def test_a_full_disk_while_collecting_keeps_the_batch_open_and_the_rerun_buys_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The cache (and so the batch records) on a real, nearly full tmpfs when the results come in: one `error:`
    line naming the cache's full disk; the batch stays open, so after space is freed the same command downloads
    its results again: every answer is kept, nothing is submitted twice."""
    from tests.small_disk import small_disk

    long = lambda prompt: default_answer(prompt) + " because " + "word " * 200  # noqa: E731 - ~1 KB a row
    with small_disk(tmp_path / "disk", "8m") as disk, FakeBatchServer(batch_delay=0.3, answer=long) as server:
        cache = disk.path / "cache.sqlite"
        argv = args(server, "openai", tmp_path / "res", *BATCH, "--cache", str(cache), limit=200)
        assert main([*argv, "--batch-wait", "0"]) == 4  # submitted, not ended yet
        disk.fill(leave=128 * 1024)
        capsys.readouterr()
        assert main(argv) == 2
        err = capsys.readouterr().err
        disk.free()
        assert main(argv) == 0
    lines = [line for line in err.splitlines() if line.startswith(("error", "warning", "Traceback"))]
    assert len(lines) == 1 and lines[0].startswith(f"error: the disk holding {cache} is full"), err
    assert "locked" not in err and "Traceback" not in err
    assert len(server.batches) == 1 and set(server.submitted.values()) == {1}
    (run,) = run_dirs(tmp_path / "res")
    assert all(s["output"] == long(s["prompt"]) for s in samples(run).values()) and len(samples(run)) == 200
    assert metrics(run)["usage"]["paid"] == {"batch": 200, "one_by_one": 0}
