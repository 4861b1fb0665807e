"""Batch records (harness/calling/batch/store.py), splitting by the providers' limits, batch prices, the listing."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from subprocess import PIPE

import pytest

from harness.calling.batch.base import Item
from harness.calling.batch.listing import list_batches
from harness.calling.batch.openai import MAX_BYTES, MAX_REQUESTS, jsonl_line
from harness.calling.batch.store import BatchStore
from harness.calling.batch.submit import split
from harness.calling.cache import ResponseCache
from harness.calling.pricing import Price, price_for
from harness.types import HarnessError
from tests.conftest import ROOT


def test_a_claimed_request_is_never_claimed_again_until_its_batch_is_collected(tmp_path: Path) -> None:
    store = BatchStore(tmp_path / "c.sqlite")
    (first,) = store.claim("openai", "gpt-4o", ["u"], [["k1", "k2"]])
    assert store.claim("openai", "gpt-4o", ["u"], [["k1", "k2"]]) == []  # both held
    (second,) = store.claim("openai", "gpt-4o", ["u"], [["k2", "k3"]])
    assert store.keys(second) == ["k3"]
    assert store.in_flight(["k1", "k2", "k3", "k4"]) == {"k1": first, "k2": first, "k3": second}
    store.set_stage(first, "submitted", batch_id="batch_1")
    assert store.collect(first, "completed", {"k2": "HTTP 400: bad"}) == (1, 1)
    assert store.in_flight(["k1", "k2"]) == {}
    assert store.answered(["k1", "k2", "k3"]) == {"k1"}
    assert store.settled_since(["k1", "k2"], 0.0) == {"k1": None, "k2": "HTTP 400: bad"}
    assert store.settled_since(["k1", "k2"], time.time() + 1) == {}  # failures before this invocation: retryable


def test_a_second_process_sees_the_claims_of_the_first(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    BatchStore(path).claim("anthropic", "claude", ["u"], [["a", "b"]])
    other = BatchStore(path)
    assert set(other.in_flight(["a", "b", "c"])) == {"a", "b"}


def test_a_claim_of_a_dead_process_is_abandoned_a_live_ones_is_not(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    code = (
        f"import sys, time, pathlib; from harness.calling.batch.store import BatchStore; "
        f"BatchStore(pathlib.Path({str(path)!r})).claim('openai', 'm', ['u'], [['x']]); "
        "print('claimed', flush=True); time.sleep(60)"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env={"PYTHONPATH": str(ROOT)}, stdout=PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"claimed"
        store = BatchStore(path)
        (theirs,) = store.rows()
        assert not store.abandoned(theirs)  # its process is alive: it may be uploading right now
    finally:
        proc.kill()
        proc.wait()
    assert store.abandoned(store.row(theirs.local_id))
    (mine,) = store.claim("openai", "m", ["u"], [["y"]])
    assert not BatchStore(path).abandoned(store.row(mine))  # claimed by this process, whichever store looks
    store.drop(theirs.local_id)
    assert store.in_flight(["x", "y"]) == {"y": mine}


def test_split_respects_requests_and_bytes() -> None:
    items = [Item(f"k{i}", {"messages": [{"role": "user", "content": "x" * (10 + i)}]}) for i in range(10)]
    assert [len(c) for c in split(items, 4, 10**9, lambda i: 1)] == [4, 4, 2]

    def size(item: Item) -> int:
        return len(jsonl_line(item, "/v1/chat/completions"))

    limit = size(items[0]) + size(items[1]) + size(items[2])  # exactly three of the smallest fit
    chunks = split(items, 100, limit, size)
    assert all(sum(size(i) for i in c) <= limit for c in chunks)
    assert [i.key for c in chunks for i in c] == [i.key for i in items]  # order kept, nothing lost
    assert len(chunks[0]) == 3
    assert MAX_REQUESTS == 50_000 and MAX_BYTES == 200_000_000


def test_batch_price_is_half_of_list_unless_the_table_says_otherwise(tmp_path: Path) -> None:
    price = price_for("gpt-4o")
    assert price is not None
    batch = price.batch()
    assert (batch.input_per_mtok, batch.output_per_mtok) == (1.25, 5.0)
    assert batch.cost(1000, 100) == pytest.approx(price.cost(1000, 100) / 2)
    table = tmp_path / "p.json"
    table.write_text('{"models": {"m": {"input": 2, "output": 4, "batch_input": 1.5, "batch_output": 3}}}')
    own = price_for("m", table)
    assert own is not None and own.batch() == Price("m (batch)", 1.5, 3.0, f"user file {table}")
    table.write_text('{"models": {"m": {"input": 2, "output": 4, "batch_input": "cheap"}}}')
    with pytest.raises(HarnessError, match="batch_input"):
        price_for("m", table)


def test_listing_names_states_and_counts(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    ResponseCache(path).close()
    store = BatchStore(path)
    pending, finished, expired = store.claim("openai", "gpt-4o", ["u"], [["a"], ["b", "c"], ["d", "e", "f"]])
    for local_id, batch_id in ((pending, "batch_p"), (finished, "batch_f"), (expired, "batch_e")):
        store.set_stage(local_id, "submitted", batch_id=batch_id)
    store.set_status(pending, "in_progress", 0, 0)
    store.collect(finished, "completed", {})
    store.collect(
        expired, "expired", {"e": "expired", "f": "expired"}, "batch expired before this request was answered"
    )
    text = list_batches(path)
    lines = text.splitlines()
    assert lines[0].split()[:4] == ["state", "provider", "model", "batch"]
    rows = {line.split()[3]: line.split() for line in lines[1:4]}
    assert rows["batch_p"][0] == "pending" and rows["batch_p"][5:8] == ["0", "0", "1"]
    assert rows["batch_f"][0] == "finished" and rows["batch_f"][5:8] == ["2", "0", "2"]
    assert rows["batch_e"][0] == "expired" and rows["batch_e"][5:8] == ["1", "2", "3"]
    assert "3 batches: 1 pending, 1 finished, 1 expired" in text
    assert "batch_e: batch expired" in text
    with pytest.raises(HarnessError, match="no response cache"):
        list_batches(tmp_path / "nowhere.sqlite")
