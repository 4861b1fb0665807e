"""API backends with the real openai and anthropic SDKs against tests/fake_server.py on 127.0.0.1.

Includes the end-to-end checks through run_eval.py: a run killed with SIGKILL and rerun sends only what
is missing and gives the results of an uninterrupted run; a bad key fails in one line.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.calling.backends.anthropic import AnthropicBackend
from harness.calling.backends.base import (
    MalformedReply,
    PermanentError,
    RetryableError,
    Unreachable,
)
from harness.calling.backends.choose import make_backend
from harness.calling.backends.openai import OpenAIBackend
from harness.calling.backends.openai_names import is_reasoning_model
from harness.calling.cache import ResponseCache
from harness.calling.dispatch import complete_all
from harness.calling.options import DispatchOptions, DispatchStats, RetryPolicy
from harness.cli.main import main
from harness.config.settings import ApiOptions, RunConfig
from harness.types import Completion, HarnessError, Request
from tests.fake_server import REFUSAL, RETRY_AFTER_MS, FakeServer, always_ok, default_answer
from tests.servers.transformers_serve import free_port

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-test-secret-0123456789"
REQ = Request("0", "Sentence 1: a cat. Sentence 2: a dog. Output:")


def make(kind: str, server: FakeServer, **kw: object) -> OpenAIBackend | AnthropicBackend:
    if kind == "openai":
        return OpenAIBackend("gpt-4o", KEY, [server.openai_url], **kw)  # type: ignore[arg-type]
    return AnthropicBackend("claude-sonnet-4-6", KEY, [server.anthropic_url], **kw)  # type: ignore[arg-type]


def send(backend: OpenAIBackend | AnthropicBackend, request: Request = REQ) -> Completion:
    async def once() -> Completion:
        try:
            return await backend.send(request)
        finally:
            await backend.aclose()

    return asyncio.run(once())


# --- what goes on the wire -----------------------------------------------------------------------


def test_openai_sends_one_user_message_at_temperature_0_with_20_tokens() -> None:
    with FakeServer() as server:
        completion = send(make("openai", server))
    body = server.calls[0].body
    assert body["messages"] == [{"role": "user", "content": REQ.prompt}]
    assert (body["model"], body["max_tokens"], body["temperature"]) == ("gpt-4o", 20, 0.0)
    assert completion.text == default_answer(REQ.prompt) and completion.usage.input_tokens == len(REQ.prompt.split())


@pytest.mark.parametrize("model", ["o1", "o3-mini", "o4-mini", "gpt-5", "gpt-5-mini"])
def test_reasoning_models_get_max_completion_tokens_and_no_temperature(model: str) -> None:
    with FakeServer() as server:
        backend = OpenAIBackend(model, KEY, [server.openai_url], reasoning_tokens=1000)
        send(backend)
    body = server.calls[0].body
    assert body["max_completion_tokens"] == 1000 and "temperature" not in body and "max_tokens" not in body
    record = backend.describe()
    assert record["sent"] == {"max_completion_tokens": 1000} and record["omitted"] == ["temperature", "max_tokens"]
    assert record["deterministic"] is False


@pytest.mark.parametrize("model", ["gpt-4", "gpt-4o", "gpt-4.1-mini", "gpt-5-chat-latest", "my-local-llama"])
def test_other_models_are_not_reasoning_models(model: str) -> None:
    assert not is_reasoning_model(model)


def test_anthropic_by_default_sends_no_temperature_and_records_sampled_decoding() -> None:
    with FakeServer() as server:
        backend = make("anthropic", server)
        completion = send(backend)
    call = server.calls[0]
    assert call.path == "/v1/messages" and call.body["messages"] == [{"role": "user", "content": REQ.prompt}]
    assert call.body["max_tokens"] == 20 and "temperature" not in call.body
    assert backend.describe()["deterministic"] is False
    assert completion.text == default_answer(REQ.prompt)


def test_anthropic_greedy_pins_the_old_api_version_and_sends_temperature_0() -> None:
    with FakeServer() as server:
        backend = make("anthropic", server, anthropic_greedy=True)
        send(backend)
    call = server.calls[0]
    assert call.body["temperature"] == 0.0 and call.headers["anthropic-version"] == "2023-06-01"
    assert backend.describe()["deterministic"] is True


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_empty_and_refusal_replies_are_answers(kind: str) -> None:
    with FakeServer(plan=lambda p, a: "empty" if "empty" in p else "refusal") as server:
        empty = send(make(kind, server), Request("0", "empty one"))
        refused = send(make(kind, server), Request("1", "other"))
    assert (empty.text, empty.refusal, empty.finish_reason) == ("", None, "stop")
    # A refusal is the model's answer: no text to parse (invalid), the refusal's words kept beside it.
    assert (refused.text, refused.refusal) == ("", REFUSAL)
    assert refused.finish_reason == ("stop" if kind == "openai" else "refusal")


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_content_null_without_a_refusal_is_a_malformed_reply(kind: str) -> None:
    with FakeServer(plan=lambda p, a: "null") as server, pytest.raises(MalformedReply):
        send(make(kind, server))


# --- how failures are classified -----------------------------------------------------------------


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
@pytest.mark.parametrize("fault", ["429", "500", "529"])
def test_rate_limits_and_server_errors_are_retryable(kind: str, fault: str) -> None:
    with FakeServer(plan=lambda p, a: fault) as server, pytest.raises(RetryableError) as err:
        send(make(kind, server))
    assert f"HTTP {fault}" in str(err.value)
    assert err.value.retry_after == (RETRY_AFTER_MS / 1000 if fault == "429" else None)


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_hung_request_is_a_retryable_timeout(kind: str) -> None:
    # Dispatch is what bounds an attempt by --timeout (attempts.py; the transport times only the connection):
    # the hung attempt is retried, then given up on as an error, never waited on for good.
    options = DispatchOptions(concurrency=2, retry=RetryPolicy(max_retries=1, timeout=0.2, backoff_initial=0.01))
    stats = DispatchStats()
    with FakeServer(plan=lambda p, a: "hang") as server:
        done = complete_all(make(kind, server), [REQ], options=options, stats=stats)
        assert len(server.calls) == 2
    assert done[REQ.id].error == "gave up after 2 tries: no answer within 0.2s (--timeout)"
    assert (stats.attempts, stats.retries, stats.errors) == (2, 1, 1)


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
@pytest.mark.parametrize("fault", ["malformed", "utf8"])
def test_unreadable_reply_is_a_retryable_malformed_reply(kind: str, fault: str) -> None:
    with FakeServer(plan=lambda p, a: fault) as server, pytest.raises(MalformedReply, match="malformed"):
        send(make(kind, server))


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
@pytest.mark.parametrize(
    ("fault", "fatal", "start"),
    [
        ("400", False, "bad_request: HTTP 400: This request is not valid"),
        ("400-context", False, "context_length_exceeded: HTTP 400: "),
        ("400-param", True, "HTTP 400: "),
    ],
)
def test_a_400_is_classified_by_what_the_provider_said(kind: str, fault: str, fatal: bool, start: str) -> None:
    with FakeServer(plan=lambda p, a: fault) as server, pytest.raises(PermanentError) as err:
        send(make(kind, server))
    assert str(err.value).startswith(start) and err.value.fatal is fatal


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_bad_key_is_fatal_and_the_echoed_key_is_redacted(kind: str) -> None:
    with FakeServer(api_key="another-key") as server, pytest.raises(PermanentError) as err:
        send(make(kind, server))
    assert err.value.fatal and "HTTP 401" in str(err.value) and KEY not in str(err.value)


# --- several servers, keys -----------------------------------------------------------------------


def test_several_base_urls_share_the_load() -> None:
    with FakeServer(latency=0.02) as a, FakeServer(latency=0.02) as b:
        backend = OpenAIBackend("any-name", "EMPTY", [a.openai_url, b.openai_url])
        done = complete_all(backend, [Request(str(i), f"p{i}") for i in range(40)])
    assert all(c.error is None for c in done.values())
    assert len(a.calls) + len(b.calls) == 40 and min(len(a.calls), len(b.calls)) >= 15


def test_missing_key_is_one_line_before_any_work(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(HarnessError, match=r"^ANTHROPIC_API_KEY is not set"):
        make_backend(RunConfig(model="claude-sonnet-4-6"))


def test_own_server_needs_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    config = RunConfig(model="my-model", backend="openai", api=ApiOptions(base_urls=("http://127.0.0.1:9/v1",)))
    backend = make_backend(config)
    assert backend.describe()["base_urls"] == ["http://127.0.0.1:9/v1/"]


# --- end to end through run_eval.py --------------------------------------------------------------


def eval_args(csts_dir: Path, results: Path, run_id: str, server: FakeServer, *extra: str) -> list[str]:
    return [
        "--model", "gpt-4o", "--data-dir", str(csts_dir), "--results-dir", str(results), "--run-id", run_id,
        "--base-url", server.openai_url, "--shots", "2", "--no-progress", *extra,
    ]  # fmt: skip


def read_run(run_dir: Path) -> tuple[list[dict], dict]:
    samples = [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]
    metrics = json.loads((run_dir / "metrics.json").read_text())
    for key in ("cache", "dispatch"):  # what this invocation did, not what the run found
        metrics.pop(key)
    return samples, metrics


def test_kill_9_then_rerun_sends_only_what_is_missing_and_matches_an_uninterrupted_run(
    csts_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = 9
    answered_first: set[str] = set()

    def plan(prompt: str, attempt: int) -> str:
        # The first 9 prompts are answered; everything after hangs, so the kill finds requests in flight.
        if prompt in answered_first or len(answered_first) < first:
            answered_first.add(prompt)
            return "ok"
        return "hang"

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    env = os.environ | {"OPENAI_API_KEY": KEY}
    with FakeServer(plan=plan, latency=0.01, api_key=KEY) as server:
        args = eval_args(csts_dir, tmp_path / "res", "killed", server, "--concurrency", "3")
        proc = subprocess.Popen([sys.executable, str(ROOT / "run_eval.py"), *args], env=env, cwd=ROOT)
        cache_file = tmp_path / "res" / "cache.sqlite"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if cache_file.exists() and len(ResponseCache(cache_file)) == first and server.in_flight == 3:
                break
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        # No results: at most the folder claimed at the start, still empty.
        assert len(ResponseCache(cache_file)) == first and not any((tmp_path / "res" / "killed").glob("*"))

        server.plan = always_ok
        before = len(server.calls)
        assert main(eval_args(csts_dir, tmp_path / "res", "resumed", server)) == 0
        assert not (tmp_path / "res" / "killed").exists()  # the dead run's empty claim was cleaned up
        resent = server.received()[before:]
        assert not set(resent) & answered_first, "a request answered before the kill was sent again"
        assert len(resent) == len(set(resent)) == 24 - first
        assert sorted(server.answered) == sorted(set(server.answered)), "some prompt was answered twice"

        assert main(eval_args(csts_dir, tmp_path / "fresh", "whole", server)) == 0
    resumed, whole = read_run(tmp_path / "res" / "resumed"), read_run(tmp_path / "fresh" / "whole")
    assert resumed == whole
    metrics = json.loads((tmp_path / "res" / "resumed" / "metrics.json").read_text())
    assert metrics["cache"] == {"mode": "on", "hits": first, "misses": 24 - first}


def test_prompts_received_are_the_rendered_ones_and_outputs_are_scored(csts_dir: Path, tmp_path: Path) -> None:
    with FakeServer(plan=lambda p, a: "refusal" if default_answer(p) < "2.5" else "ok") as s:
        assert main(eval_args(csts_dir, tmp_path, "r", s)) == 0
    samples, metrics = read_run(tmp_path / "r")
    sent = {c.body["messages"][0]["content"] for c in s.calls}
    assert sent == {x["prompt"] for x in samples}
    refused = {c.prompt for c in s.calls if c.action == "refusal"}
    assert all((x["refusal"] == REFUSAL) == (x["prompt"] in refused) for x in samples)
    assert all(x["output"] == "" and not x["valid"] for x in samples if x["prompt"] in refused)
    assert metrics["invalid"] == len(refused) > 0 and metrics["errors"] == 0


def test_bad_key_fails_in_one_line_and_writes_nothing(
    csts_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FakeServer(api_key="the-real-key") as server:
        assert main(eval_args(csts_dir, tmp_path, "r", server)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and "HTTP 401" in err and KEY not in err
    assert not (tmp_path / "r").exists()


def test_no_key_in_config_json_or_cache(csts_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FakeServer(api_key=KEY) as server:
        assert main(eval_args(csts_dir, tmp_path, "r", server)) == 0
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "config.json" for p in files) and any(p.name.startswith("cache.sqlite") for p in files)
    assert all(KEY.encode() not in p.read_bytes() for p in files)


def test_dry_run_prints_requests_tokens_and_cost_without_a_key(
    csts_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    args = ["--model", "gpt-4", "--data-dir", str(csts_dir), "--results-dir", str(tmp_path), "--dry-run"]
    assert main(args) == 0
    line = capsys.readouterr().out.splitlines()[0]
    assert line.startswith("dry run: 24 requests,") and "at most 480 output tokens" in line and "cost at most $" in line


def test_max_cost_without_a_known_price_fails_before_any_work(
    csts_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeServer() as server:
        args = eval_args(csts_dir, tmp_path, "r", server, "--max-cost", "1")
        args[args.index("gpt-4o")] = "my-local-model"
        assert main([*args, "--backend", "openai"]) == 2
    assert "--max-cost needs a price" in capsys.readouterr().err and not server.calls


def test_unreachable_server_says_what_it_waits_for_then_stops_in_one_line_with_no_run_folder(
    csts_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], server_polls: list[float]
) -> None:
    """Issue 20 class 13: a refused connection before any answer prints one line at once (what it waits for),
    is polled for --wait-for-server seconds, then stops the run with one error line, not after every request's
    nine tries (94.6 s with the default backoff)."""
    port = free_port()  # free a moment ago: nothing listens there now
    url = f"http://127.0.0.1:{port}/v1"
    argv = [
        "--backend", "openai", "--model", "m", "--data-dir", str(csts_dir), "--results-dir", str(tmp_path),
        "--run-id", "r", "--base-url", url, "--no-progress", "--wait-for-server", "1.5",
    ]  # fmt: skip
    assert main(argv) == 2
    waiting, error, *rest = capsys.readouterr().err.splitlines()
    assert not rest
    assert waiting.startswith(f"waiting for the server at {url}/: connection error: connection refused")
    assert "up to 1.5s (--wait-for-server)" in waiting
    assert error.startswith(f"error: openai model 'm': no server answered at {url}/ within 1.5s")
    assert "--wait-for-server SECONDS" in error
    # Polled every second for 1.5 s: at most two polls a request of the 24 (a busy machine makes fewer), where the
    # default retry policy alone would try each nine times, backing off for over 90 s.
    assert set(server_polls) == {1.0} and len(server_polls) <= 2 * 24
    assert not (tmp_path / "r").exists()


def test_an_unreachable_server_from_openai_base_url_asks_about_the_variable_not_the_flag(
    csts_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], server_polls: list[float],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """No --base-url: the dead server's address came from $OPENAI_BASE_URL (a shell profile's, forgotten), so the
    one line asks about that variable, not about a flag the user never gave."""
    url = f"http://127.0.0.1:{free_port()}/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    monkeypatch.setenv("OPENAI_API_KEY", "EMPTY")
    argv = [
        "--backend", "openai", "--model", "m", "--data-dir", str(csts_dir), "--results-dir", str(tmp_path),
        "--run-id", "r", "--no-progress", "--wait-for-server", "0",
    ]  # fmt: skip
    assert main(argv) == 2
    (error,) = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert f"no server answered at {url}/ within 0s" in error
    assert "is it running, and is $OPENAI_BASE_URL right?" in error and "--base-url" not in error
    assert not (tmp_path / "r").exists()


def test_an_unreachable_servers_line_shows_where_without_its_credentials(
    csts_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], server_polls: list[float]
) -> None:
    """The one line a dead gateway gets names its address, never the key in its query or its user:password@."""
    port = free_port()  # free a moment ago: nothing listens there now
    url = f"http://127.0.0.1:{port}/v1?api-key=gw-s3cret-4242"
    argv = [
        "--backend", "openai", "--model", "m", "--data-dir", str(csts_dir), "--results-dir", str(tmp_path),
        "--run-id", "r", "--base-url", url, "--no-progress", "--wait-for-server", "0",
    ]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "gw-s3cret-4242" not in err
    assert f"no server answered at http://127.0.0.1:{port}/v1/ within 0s" in err
    assert not (tmp_path / "r").exists()
    # A user:password@ in the address is left out the same way
    assert (
        Unreachable("refused", "https://user:pw-4242@gw.example:8443/v1?api-key=k").url == "https://gw.example:8443/v1"
    )
