"""The SQLite response cache: keys cover the whole request, rows commit at once, errors never stored."""

from __future__ import annotations

import asyncio
import contextlib
import json
import multiprocessing
import sqlite3
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from harness.calling.cache import INLINE_WAIT_MS, ResponseCache
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
    # A caller that waited out the lock would wait a minute a put (and meet the test's timeout), not a busy
    # machine's fraction of a second more: no bound on the time the puts took (issue 33), a count of what they ran.
    cache = ResponseCache(path, busy_timeout_ms=60_000)
    ran: list[str] = []
    cache._open().set_trace_callback(ran.append)  # every statement the caller's own connection starts
    for i in range(20):
        cache.put(f"k{i}", Completion(str(i), f"{i}.0", finish_reason="stop"), "openai", "m")
    # One try at the file, after the busy timeout came down to INLINE_WAIT_MS; the other 19 queued behind it.
    assert ran[0] == f"PRAGMA busy_timeout = {INLINE_WAIT_MS}" and len(ran) == 2, ran
    assert ran[1].startswith("INSERT") and cache.deferred == 20
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
    waits: list[int] = []  # each write tried inside the event loop: the busy timeout it could wait, in ms
    insert = cache_module._insert

    def spied(db: sqlite3.Connection, rows: list[Any]) -> list[Any]:
        with contextlib.suppress(RuntimeError):  # outside the loop (the writer thread, close()): not recorded
            asyncio.get_running_loop()
            waits.append(db.execute("PRAGMA busy_timeout").fetchone()[0])
        return insert(db, rows)

    monkeypatch.setattr(cache_module, "_insert", spied)
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
    # The lock stalled nothing: one write was tried in the event loop, waiting at most INLINE_WAIT_MS, and the
    # backlog took the rest (a count, not the run's seconds, which a busy machine stretches).
    assert waits == [cache_module.INLINE_WAIT_MS]
    assert server.max_in_flight == 8
    assert "24 answers are in this run's results but not in the cache" in capsys.readouterr().err


# --- replies whose text UTF-8 cannot hold; rows SQLite refuses -----------------------------------------------

HOSTILE = [
    "3.0 \ud800",  # a lone surrogate, as json.loads reads the server's "\ud800"
    "\udfff\ud800 2.5",  # two, in the wrong order
    "4.0\x00after a NUL",
    "1.0 \x01\x1b[31m\x7f\u2028 control characters",
    '"\\ud800" looks like an escape',  # the six characters, not a surrogate: must not be unescaped
    "\ufffe\uffff\U0010ffff 5.0",
]


def test_any_text_a_server_sends_round_trips_exactly(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    for i, text in enumerate(HOSTILE):
        cache.put(f"k{i}", Completion(str(i), text, usage=Usage(3, 1), finish_reason="stop"), "openai", "m")
    cache.close()
    assert cache.unsaved == 0
    again = ResponseCache(tmp_path / "c.sqlite")
    for i, text in enumerate(HOSTILE):
        assert again.get(f"k{i}", "x") == Completion("x", text, usage=Usage(3, 1), cached=True, finish_reason="stop")
    # Escaped only where UTF-8 cannot hold the text, and the row says so.
    rows = dict(sqlite3.connect(tmp_path / "c.sqlite").execute("SELECT key, meta FROM responses"))
    assert [json.loads(rows[f"k{i}"]).get("text") for i in range(len(HOSTILE))] == ["json", "json"] + [None] * 4


async def _one_turn(cache: ResponseCache, completions: list[Completion]) -> None:
    for c in completions:  # put in one event-loop turn: committed together, in one transaction
        cache.put(f"k{c.request_id}", c, "openai", "m")
    await asyncio.sleep(0)


def test_one_row_sqlite_refuses_never_takes_the_rows_of_its_transaction_down(tmp_path: Path) -> None:
    path = _existing(tmp_path / "c.sqlite")
    cache = ResponseCache(path)
    good = [Completion(str(i), f"{i}.0", usage=Usage(5, 1)) for i in range(6)]
    bad = Completion("bad", "2.0", usage=Usage(2**70, 1))  # a usage no SQLite INTEGER holds: the binding refuses it
    asyncio.run(_one_turn(cache, [*good[:3], bad, *good[3:]]))
    cache.put("k-after", Completion("after", "1.0"), "openai", "m")  # the file is not left inside a transaction
    cache.close()
    assert (cache.unsaved, cache.refused) == (1, 1) and "refused 1 answers" in (cache.problem or "")
    again = ResponseCache(path)
    assert len(again) == 1 + 6 + 1 and again.get("kbad", "x") is None
    assert all(again.get(f"k{c.request_id}", c.request_id) == replace(c, cached=True) for c in good)


def test_a_run_keeps_every_answer_when_one_reply_holds_a_lone_surrogate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The real openai SDK against tests/fake_server.py: one reply's JSON holds "\\ud800" (escaped, as json.dumps
    sends it); every answer is cached, the run folder is written, and a rerun buys nothing."""
    from harness.cli.main import main
    from tests.fake_server import FakeServer, default_answer

    hostile: list[str] = []

    def answer(prompt: str) -> str:
        if not hostile or prompt == hostile[0]:
            hostile[:1] = [prompt]
            return default_answer(prompt) + " \ud800 \x00"
        return default_answer(prompt)

    results = tmp_path / "res"
    with FakeServer(answer=answer) as server:
        argv = ["--model", "gpt-4o", "--base-url", server.openai_url, "--dataset", "stsb", "--limit", "40",
                "--results-dir", str(results), "--no-progress", "--concurrency", "8"]  # fmt: skip
        assert main([*argv, "--run-id", "a"]) == 0
        sent = len(server.calls)
        assert main([*argv, "--run-id", "b"]) == 0  # the rerun: every answer from the cache
        assert len(server.calls) == sent == 40
    assert "Traceback" not in capsys.readouterr().err
    cache = ResponseCache(results / "cache.sqlite")
    assert len(cache) == 40 and cache.unsaved == 0
    for run in ("a", "b"):
        samples = [json.loads(line) for line in (results / run / "samples.jsonl").read_text().splitlines()]
        odd = [s for s in samples if s["prompt"] == hostile[0]]
        expected = default_answer(hostile[0]) + " \ud800 \x00"
        assert len(samples) == 40 and odd and all(s["output"] == expected for s in odd)
        assert all(s["error"] is None for s in samples)


# --- a full disk under the cache ------------------------------------------------------------------------------


def test_a_full_disk_under_the_cache_stops_the_run_in_one_line_and_the_rerun_buys_only_what_was_lost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real tmpfs, nearly full: the cache takes a few answers, then SQLite says SQLITE_FULL. The run stops sending
    at once, says so in one `error:` line naming the cache and the full disk (not a lock, not a traceback), and
    after space is freed the same command buys exactly the requests whose answers were not stored."""
    from harness.cli.main import main
    from tests.fake_server import FakeServer, default_answer
    from tests.small_disk import small_disk

    long = lambda prompt: default_answer(prompt) + " because " + "word " * 200  # noqa: E731 - ~1 KB a row
    with small_disk(tmp_path / "disk", "8m") as disk, FakeServer(answer=long, latency=0.01) as server:
        cache_path = disk.path / "cache.sqlite"
        _existing(cache_path)
        disk.fill(leave=128 * 1024)
        argv = ["--model", "gpt-4o", "--base-url", server.openai_url, "--dataset", "stsb", "--limit", "200",
                "--results-dir", str(tmp_path / "res"), "--cache", str(cache_path), "--no-progress",
                "--concurrency", "4"]  # fmt: skip
        assert main([*argv, "--run-id", "a"]) == 2
        err = capsys.readouterr().err
        first = server.received()
        disk.free()
        stored = len(ResponseCache(cache_path)) - 1  # the seed row is not this run's
        assert main([*argv, "--run-id", "b"]) == 0, capsys.readouterr().err
        again = server.received()[len(first) :]
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"error: the disk holding {cache_path} is full"), err
    assert "locked" not in err and "Traceback" not in err
    assert 0 < stored < len(first) < 200  # some answers stored, then it stopped sending long before the end
    assert f"{len(first) - stored} that came after could not be kept" in lines[0]
    assert not (tmp_path / "res" / "a").exists()
    # The rerun sends each prompt whose answer was not stored, and only those.
    prompts = {json.loads(line)["prompt"] for line in (tmp_path / "res" / "b" / "samples.jsonl").open()}
    assert len(set(again)) == len(prompts) - stored and not set(again) & (set(first) - set(again))


# --- another program's SQLite file given as the cache --------------------------------------------------------------


def _foreign(path: Path, schema: str) -> bytes:
    db = sqlite3.connect(path)
    db.execute(schema)
    db.execute(f"INSERT INTO {schema.split()[2]} VALUES ('alice', 'x')")
    db.commit()
    db.close()
    return path.read_bytes()


@pytest.mark.parametrize(
    "schema",
    [
        "CREATE TABLE users (name TEXT, email TEXT)",
        "CREATE TABLE responses (id TEXT, body TEXT)",
        # a table that borrows a name the batch records use: the file is still another program's (issue 30)
        "CREATE TABLE batches (id TEXT, body TEXT)",
        "CREATE TABLE batch_requests (id TEXT, body TEXT)",
    ],
)
def test_another_programs_sqlite_file_is_refused_and_left_unchanged(
    schema: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.calling.batch.store import BatchStore
    from harness.cli.main import main
    from harness.types import HarnessError
    from tests.fake_server import FakeServer

    path = tmp_path / "app.db"
    before = _foreign(path, schema)
    for opener in (ResponseCache, BatchStore):
        with pytest.raises(HarnessError, match=r"is an SQLite database of another program .* left unchanged"):
            opener(path)
    with FakeServer() as server:
        for extra in ([], ["--batch"]):
            argv = ["--model", "gpt-4o", "--base-url", server.openai_url, "--dataset", "stsb", "--limit", "5",
                    "--results-dir", str(tmp_path / "res"), "--cache", str(path), "--no-progress", *extra]  # fmt: skip
            assert main(argv) == 2
            err = capsys.readouterr().err.strip().splitlines()
            assert len(err) == 1 and err[0].startswith(f"error: {path} is an SQLite database of another program")
    assert server.calls == [] and path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db"]  # no -wal, no -shm, no results folder


@pytest.mark.parametrize(
    "extra",
    [
        "CREATE TABLE batches (id TEXT, body TEXT)",
        "ALTER TABLE responses ADD COLUMN user_id TEXT",  # our columns and one more: not our table
        "CREATE VIEW recent AS SELECT key FROM responses",
        "CREATE TRIGGER audit AFTER INSERT ON responses BEGIN SELECT 1; END",
        "CREATE INDEX by_model ON responses (model)",
    ],
)
def test_a_cache_file_with_more_in_its_schema_is_refused_and_left_unchanged(extra: str, tmp_path: Path) -> None:
    """The whole schema is checked, not only the table names: anything another program added makes it foreign."""
    from harness.types import HarnessError

    path = tmp_path / "cache.sqlite"
    cache = ResponseCache(path)
    cache.put("k", Completion("0", "3.0"), "openai", "m")
    cache.close()
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode = DELETE")  # a file another program keeps: no WAL
    db.execute(extra)
    db.commit()
    db.close()
    before = path.read_bytes()
    with pytest.raises(HarnessError, match=r"is an SQLite database of another program .* left unchanged"):
        ResponseCache(path)
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["cache.sqlite"]
