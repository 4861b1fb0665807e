"""The SQLite response cache: keys cover the whole request, rows commit at once, errors never stored."""

from __future__ import annotations

import json
import multiprocessing
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from harness.calling.cache import ResponseCache
from harness.calling.cache_keys import request_key
from harness.types import Completion, Request, Usage


@dataclass
class Stub:
    """Just what the key reads from a backend."""

    name: str = "openai"
    model: str = "gpt-4o"
    params: dict[str, object] = field(
        default_factory=lambda: {"base_urls": ["https://api.openai.com/v1/"], "sent": {"temperature": 0.0}}
    )

    def describe(self) -> dict[str, object]:
        return self.params


REQ = Request("7", "Sentence 1: a. Sentence 2: b. Output:")


def test_roundtrip_returns_the_answer_marked_cached(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    key = request_key(Stub(), REQ)
    assert cache.get(key, "7") is None
    cache.put(key, Completion("7", "3.5", usage=Usage(12, 2)), "openai", "gpt-4o")
    assert cache.get(key, "99") == Completion("99", "3.5", usage=Usage(12, 2), cached=True)


def test_empty_text_is_an_answer_and_is_kept(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.put("k", Completion("1", ""), "openai", "m")
    assert cache.get("k", "1") == Completion("1", "", cached=True)


@pytest.mark.parametrize(
    "change",
    [
        {"name": "anthropic"},
        {"model": "gpt-4"},
        {"params": {"base_urls": ["http://127.0.0.1:8000/v1/"], "sent": {"temperature": 0.0}}},
        {"params": {"base_urls": ["https://api.openai.com/v1/"], "sent": {"temperature": 0.7}}},
    ],
)
def test_key_changes_with_backend_model_endpoint_and_decoding(change: dict[str, object]) -> None:
    assert request_key(Stub(**change), REQ) != request_key(Stub(), REQ)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "other",
    [Request("7", REQ.prompt + " "), Request("7", REQ.prompt, max_tokens=21), Request("7", REQ.prompt, 20, 1.0)],
)
def test_key_changes_with_prompt_and_request_params(other: Request) -> None:
    assert request_key(Stub(), other) != request_key(Stub(), REQ)


def test_key_ignores_the_request_id() -> None:
    assert request_key(Stub(), Request("other", REQ.prompt)) == request_key(Stub(), REQ)


def test_errors_are_never_cached(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    with pytest.raises(ValueError):
        cache.put("k", Completion("1", None, error="HTTP 500"), "openai", "m")
    assert len(cache) == 0


def test_a_row_is_visible_to_another_connection_as_soon_as_it_is_put(tmp_path: Path) -> None:
    writer = ResponseCache(tmp_path / "c.sqlite")
    writer.put("k", Completion("1", "2.0"), "openai", "m")
    # No close(): a process killed now keeps the row.
    reader = sqlite3.connect(tmp_path / "c.sqlite")
    assert reader.execute("SELECT text FROM responses WHERE key = 'k'").fetchone() == ("2.0",)
    assert reader.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def _writer(path: str, tag: str, n: int) -> None:
    cache = ResponseCache(Path(path))
    for i in range(n):
        cache.put(f"{tag}-{i}", Completion(str(i), "1.0"), "openai", "m")
        cache.get(f"{tag}-{i // 2}", "x")
    cache.close()  # writes whatever met the other process's lock
    assert cache.unsaved == 0


def test_two_processes_can_share_one_file(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.sqlite")
    ResponseCache(Path(path)).close()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, tag, 300)) for tag in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0]
    assert len(ResponseCache(Path(path))) == 600


def test_the_file_holds_no_prompt_text(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    request = Request("1", "UNIQUE-PROMPT-TEXT-4242")
    cache.put(request_key(Stub(), request), Completion("1", "4.0"), "openai", "m")
    cache.close()
    assert b"UNIQUE-PROMPT-TEXT-4242" not in b"".join(p.read_bytes() for p in tmp_path.iterdir())


# --- a cache file another process holds locked -----------------------------------------------------


class WriteLock:
    """Another connection holding the file's write lock (BEGIN IMMEDIATE) until release()."""

    def __init__(self, path: Path) -> None:
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.db.execute("BEGIN IMMEDIATE")

    def release(self) -> None:
        self.db.execute("ROLLBACK")
        self.db.close()


def _existing(path: Path) -> Path:
    cache = ResponseCache(path)
    cache.put("seed", Completion("0", "1.0"), "openai", "m")
    cache.close()
    return path


def test_a_locked_file_never_blocks_put_and_the_backlog_is_written_once_it_frees(tmp_path: Path) -> None:
    path = _existing(tmp_path / "c.sqlite")
    lock = WriteLock(path)
    cache = ResponseCache(path, busy_timeout_ms=5_000)
    started = time.perf_counter()
    for i in range(20):
        cache.put(f"k{i}", Completion(str(i), f"{i}.0", finish_reason="stop"), "openai", "m")
    assert time.perf_counter() - started < 1.0  # 20 puts against a lock: no 5 s wait inside the caller
    threading.Timer(0.3, lock.release).start()
    cache.close()  # waits for the lock to go, then writes the backlog
    assert (cache.deferred, cache.unsaved) == (20, 0)
    again = ResponseCache(path)
    assert len(again) == 21 and again.get("k7", "x") == Completion("x", "7.0", cached=True, finish_reason="stop")


def test_a_file_locked_past_the_busy_timeout_leaves_the_answers_unsaved_not_lost(tmp_path: Path) -> None:
    path = _existing(tmp_path / "c.sqlite")
    lock = WriteLock(path)
    cache = ResponseCache(path, busy_timeout_ms=200)
    for i in range(5):
        cache.put(f"k{i}", Completion(str(i), "2.0"), "openai", "m")
    cache.close()
    lock.release()
    assert cache.unsaved == 5 and len(ResponseCache(path)) == 1


def test_a_run_finishes_and_says_so_when_its_cache_stays_locked(
    csts_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.calling import cache as cache_module
    from harness.cli.main import main
    from tests.fake_server import FakeServer

    monkeypatch.setattr(cache_module, "BUSY_TIMEOUT_MS", 300)
    results = tmp_path / "res"
    results.mkdir()
    lock = WriteLock(_existing(results / "cache.sqlite"))
    try:
        with FakeServer(latency=0.05) as server:
            argv = ["--model", "gpt-4o", "--base-url", server.openai_url, "--data-dir", str(csts_dir), "--shots", "2",
                    "--results-dir", str(results), "--run-id", "r", "--no-progress", "--concurrency", "8"]  # fmt: skip
            assert main(argv) == 0
    finally:
        lock.release()
    metrics = json.loads((results / "r" / "metrics.json").read_text())
    samples = [json.loads(line) for line in (results / "r" / "samples.jsonl").read_text().splitlines()]
    assert metrics["cache"]["unsaved"] == 24 and "could not be written" in metrics["cache"]["note"]
    assert all(s["output"] is not None and s["error"] is None for s in samples) and metrics["errors"] == 0
    assert metrics["dispatch"]["seconds"] < 5  # 24 requests at 0.05 s, 8 at a time: the lock stalled nothing
    assert server.max_in_flight == 8
    assert "24 answers are in this run's results but not in the cache" in capsys.readouterr().err
