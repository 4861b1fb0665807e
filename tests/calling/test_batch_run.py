"""--batch end to end through run_eval.py: the real SDKs against tests/fake_batch_server.py on 127.0.0.1.

Same answers as one by one, same cache keys, same request bodies; several batches where limits require;
a sweep's cells submitted together; costs at the batch price; the dry run and --max-cost.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from harness.cli.main import main
from tests.fake_batch_server import FakeBatchServer

KINDS = ("openai", "anthropic")
MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5"}
BATCH = ("--batch", "--batch-poll", "0.05")


def args(server: FakeBatchServer, kind: str, results: Path, *extra: str, limit: int = 20) -> list[str]:
    url = server.openai_url if kind == "openai" else server.anthropic_url
    return [
        "--backend", kind, "--model", MODELS[kind], "--base-url", url, "--dataset", "stsb", "--limit", str(limit),
        "--results-dir", str(results), "--no-progress", *extra,
    ]  # fmt: skip


def run_dirs(results: Path) -> list[Path]:
    return sorted(p for p in results.iterdir() if p.is_dir() and not p.name.startswith((".", "sweep-")))


def samples(run_dir: Path) -> dict[str, dict]:
    lines = (run_dir / "samples.jsonl").read_text().splitlines()
    return {s["id"]: s for s in map(json.loads, lines)}


def metrics(run_dir: Path) -> dict:
    return json.loads((run_dir / "metrics.json").read_text())


@pytest.mark.parametrize("kind", KINDS)
def test_200_requests_by_batch_give_the_predictions_of_one_by_one(kind: str, tmp_path: Path) -> None:
    with FakeBatchServer(batch_delay=0.2) as server:
        assert main(args(server, kind, tmp_path / "one", limit=200)) == 0
        one_by_one_calls = len(server.calls)
        assert main(args(server, kind, tmp_path / "batch", *BATCH, limit=200)) == 0
        assert len(server.calls) == one_by_one_calls == 200  # the batch run sent nothing one by one
    (one,), (batch,) = run_dirs(tmp_path / "one"), run_dirs(tmp_path / "batch")
    a, b = samples(one), samples(batch)
    assert len(a) == 200 and all(a[i]["prediction"] == b[i]["prediction"] for i in a)
    assert [a[i]["output"] for i in a] == [b[i]["output"] for i in a]
    unique = len({s["prompt"] for s in a.values()})  # STS-B repeats a few pairs: the batch sends each once
    assert set(server.submitted.values()) == {1} and len(server.submitted) == unique
    usage, dispatch = metrics(batch)["usage"], metrics(batch)["dispatch"]
    assert usage["paid"] == {"batch": 200, "one_by_one": 0}
    assert usage["cost_usd"] == pytest.approx(usage["list_cost_usd"] / 2, rel=1e-3)
    assert metrics(one)["usage"]["cost_usd"] == pytest.approx(usage["list_cost_usd"])
    assert "paid" not in metrics(one)["usage"]
    assert dispatch["batch"]["submitted"] == unique and len(dispatch["batch"]["batches"]) == 1


@pytest.mark.parametrize(("kind", "extra"), [("openai", ()), ("anthropic", ()), ("anthropic", ("--anthropic-greedy",))])
def test_batch_bodies_are_the_one_by_one_bodies(kind: str, extra: tuple[str, ...], tmp_path: Path) -> None:
    with FakeBatchServer() as server:
        assert main(args(server, kind, tmp_path / "one", *extra, limit=5)) == 0
        assert main(args(server, kind, tmp_path / "batch", *extra, *BATCH, limit=5)) == 0
    one_by_one = {c.prompt: {k: v for k, v in c.body.items() if k != "_key"} for c in server.calls}
    (batch,) = server.batches.values()
    batched = {server.prompt_of(kind, body): body for _, body in batch.items}
    assert batched == one_by_one and len(batched) == 5
    assert all(("temperature" in b) == bool(extra) or kind == "openai" for b in batched.values())


def test_a_grid_half_done_one_way_finishes_the_other(tmp_path: Path) -> None:
    results = tmp_path / "res"
    with FakeBatchServer(batch_delay=0.1) as server:
        assert main(args(server, "openai", results, limit=30)) == 0
        first = {c.prompt for c in server.calls}
        assert main(args(server, "openai", results, *BATCH, limit=60)) == 0
        assert len(server.calls) == 30 and not set(server.submitted) & first  # only the 30 new ones batched
        assert sum(server.submitted.values()) == 30
        assert main(args(server, "openai", results, limit=60)) == 0
        assert len(server.calls) == 30  # one by one finds the batch answers in the cache
    batch_run, last = run_dirs(results)[1:]
    assert metrics(batch_run)["cache"] == {"mode": "on", "hits": 30, "misses": 30}
    assert metrics(batch_run)["usage"]["paid"] == {"batch": 30, "one_by_one": 30}
    assert metrics(last)["usage"]["paid"] == {"batch": 30, "one_by_one": 30}  # cached, but a batch paid for it
    assert [s["prediction"] for s in samples(last).values()] == [s["prediction"] for s in samples(batch_run).values()]


def test_requests_are_split_into_batches_of_the_limit(tmp_path: Path) -> None:
    with FakeBatchServer(batch_delay=0.1) as server:
        assert main(args(server, "openai", tmp_path, *BATCH, "--batch-max-requests", "8", limit=20)) == 0
    assert sorted(len(b.items) for b in server.batches.values()) == [4, 8, 8]
    assert set(server.submitted.values()) == {1} and len(server.submitted) == 20
    assert all(s["error"] is None for s in samples(run_dirs(tmp_path)[0]).values())


def test_sweep_submits_every_cells_requests_together_then_writes_each_cell(tmp_path: Path) -> None:
    grid = ["--instr", "none,short", "--shots", "0,2"]
    with FakeBatchServer(batch_delay=0.1) as server:
        assert main([*args(server, "openai", tmp_path, *BATCH, limit=10), *grid]) == 0
        assert len(server.batches) == 1  # four cells, one batch
        (batch,) = server.batches.values()
        assert len(batch.items) == 40 and set(server.submitted.values()) == {1}
        cells = run_dirs(tmp_path)
        assert len(cells) == 4 and all(metrics(c)["errors"] == 0 for c in cells)
        assert all(metrics(c)["usage"]["paid"]["batch"] == 10 for c in cells)
        assert main([*args(server, "openai", tmp_path, *BATCH, limit=10), *grid]) == 0  # all reused
        assert len(server.batches) == 1 and len(run_dirs(tmp_path)) == 4
    first, second = sorted(tmp_path.glob("sweep-*"))
    assert all(c["reused"] is False for c in json.loads((first / "sweep.json").read_text())["cells"])
    assert all(c["reused"] is True for c in json.loads((second / "sweep.json").read_text())["cells"])


def test_sweep_with_batch_wait_0_writes_nothing_and_exits_4(tmp_path: Path) -> None:
    grid = ["--instr", "none,short"]
    with FakeBatchServer(batch_delay=30) as server:
        assert main([*args(server, "openai", tmp_path, *BATCH, "--batch-wait", "0", limit=5), *grid]) == 4
        assert len(server.batches) == 1
    assert run_dirs(tmp_path) == [] and not list(tmp_path.glob("sweep-*"))


def test_dry_run_prints_one_by_one_and_batch_cost(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--model", "gpt-4o", "--dataset", "stsb", "--limit", "50", "--dry-run", "--results-dir", str(tmp_path)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert " one by one, $" in out and " with --batch" in out
    m = metrics(run_dirs(tmp_path)[0])
    assert m["max_cost_batch_usd"] == pytest.approx(m["max_cost_usd"] / 2, abs=1e-4)
    assert m["max_cost_batch_usd"] > 0


def test_max_cost_applies_to_the_batch_estimate_before_submission(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["--model", "gpt-4o", "--dataset", "stsb", "--limit", "40", "--no-progress"]
    assert main([*base, "--dry-run", "--results-dir", str(tmp_path / "dry")]) == 0
    estimate = metrics(run_dirs(tmp_path / "dry")[0])
    listed, batched = estimate["max_cost_usd"], estimate["max_cost_batch_usd"]
    with FakeBatchServer(batch_delay=0.1) as server:
        extra = ["--base-url", server.openai_url, *BATCH, "--results-dir", str(tmp_path / "r")]
        assert main([*base, *extra, "--max-cost", f"{batched * 0.97:.6f}"]) == 2
        assert "nothing submitted" in capsys.readouterr().err and server.batches == {}
        assert not (tmp_path / "r").exists() or run_dirs(tmp_path / "r") == []
        # Over the batch estimate but under the list price: the batch goes out.
        assert main([*base, *extra, "--max-cost", f"{(batched * 1.03):.6f}"]) == 0
        assert batched * 1.03 < listed and len(server.batches) == 1


def test_bad_batch_options_are_one_line_and_send_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeBatchServer() as server:
        cases = [
            (args(server, "openai", tmp_path, *BATCH, "--no-cache"), "--no-cache"),
            (args(server, "openai", tmp_path, "--batch-wait", "0"), "go with --batch"),
            (args(server, "openai", tmp_path, *BATCH, "--batch-wait", "-1"), "--batch-wait"),
            (args(server, "openai", tmp_path, "--batch", "--batch-poll", "0"), "--batch-poll"),
        ]
        for argv, message in cases:
            assert main(argv) == 2
            err = capsys.readouterr().err
            assert err.startswith("error: ") and message in err and err.count("\n") == 1
        assert server.batches == {} and server.calls == []
    assert not tmp_path.exists() or run_dirs(tmp_path) == []


def test_backends_without_a_batch_endpoint_run_as_usual(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--model", "overlap", "--dataset", "stsb", "--limit", "5", "--batch", "--results-dir", str(tmp_path)]
    assert main([*argv, "--no-progress"]) == 0
    assert "note: --batch covers the openai and anthropic backends; offline runs as usual" in capsys.readouterr().err
    assert len(run_dirs(tmp_path)) == 1


def test_a_server_without_a_batch_endpoint_is_one_line_and_leaves_no_claim(tmp_path: Path) -> None:
    from harness.calling.batch.store import BatchStore
    from tests.fake_server import FakeServer

    with FakeServer() as server:
        argv = [
            "--backend", "openai", "--model", "m", "--base-url", server.openai_url, "--dataset", "stsb",
            "--limit", "3", "--results-dir", str(tmp_path), "--no-progress", *BATCH,
        ]  # fmt: skip
        assert main(argv) == 2
    assert run_dirs(tmp_path) == [] and BatchStore(tmp_path / "cache.sqlite").rows() == []


def test_the_cache_file_holds_no_prompts_and_no_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = "sk-very-secret-batch-key-0123"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    with FakeBatchServer(batch_delay=0.05) as server:
        assert main(args(server, "openai", tmp_path, *BATCH, limit=10)) == 0
    data = b"".join(p.read_bytes() for p in tmp_path.glob("cache.sqlite*"))
    assert key.encode() not in data
    prompts = Counter(s["prompt"] for s in samples(run_dirs(tmp_path)[0]).values())
    assert not any(p.encode() in data for p in prompts)
