"""No secret in any file or line (issue 30): a server that echoes the API key in a reply's `model` and `finish_reason`
(or `stop_reason`), in its model list, or a proxy that echoes its Proxy-Authorization. Real runs through the CLI
and the real SDKs against tests/fake_server.py (and a proxy of a few lines) on 127.0.0.1; then every byte of every
file the run, its cache and its reports wrote, and everything it printed, is searched for the secret."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli.main import main
from tests.calling.test_transport import Proxy
from tests.fake_batch_server import FakeBatchServer
from tests.fake_server import FakeServer

KEY = "sk-echoed-secret-4f9a1c"
PROXY_PASSWORD = "pr0xy-s3cret"
TOKEN = "bWU6cHIweHktczNjcmV0"  # base64("me:pr0xy-s3cret"): what the proxy gets in Proxy-Authorization


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


def files_holding(folder: Path, secrets: tuple[str, ...]) -> dict[str, list[str]]:
    out = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes()
        hits = [s for s in secrets if s.encode() in data]
        if hits:
            out[str(path.relative_to(folder))] = hits
    return out


def echo_key(endpoint: str, request: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
    """The key the request carried, put into every field a reply has besides its text."""
    reply["model"] = f"served-{KEY}"
    if "choices" in reply:
        reply["choices"][0]["finish_reason"] = f"stop ({KEY})"
    else:
        reply["stop_reason"] = f"end_turn ({KEY})"
    return reply


@pytest.mark.parametrize(("backend", "variable"), [("openai", "OPENAI_API_KEY"), ("anthropic", "ANTHROPIC_API_KEY")])
def test_a_key_echoed_in_model_and_finish_reason_reaches_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, backend: str, variable: str
) -> None:
    monkeypatch.setenv(variable, KEY)
    results = tmp_path / "results"
    with FakeServer(extras=echo_key) as server:
        url = server.openai_url if backend == "openai" else server.anthropic_url
        args = ["--model", "echo-model", "--backend", backend, "--base-url", url, "--dataset", "stsb", "--limit", "6"]
        args += ["--results-dir", str(results), "--run-id", "r", "--no-progress"]
        assert main(args) == 0
        assert main([*args, "--run-id", "again"]) == 0  # from the cache
        assert len(server.calls) == 6  # the rerun bought nothing again
    assert main(["report", str(results / "r"), str(results / "again"), "--out", str(tmp_path / "report")]) == 0
    shared = tmp_path / "shared"
    assert main(["report", str(results / "r"), "--out", str(shared), "--shareable"]) == 0
    printed = capsys.readouterr()
    assert files_holding(tmp_path, (KEY,)) == {}
    assert KEY not in printed.out + printed.err
    for run in ("r", "again"):
        rows = [json.loads(line) for line in (results / run / "samples.jsonl").read_text().splitlines()]
        assert {r["served_model"] for r in rows} == {"served-[redacted]"}
        want = "stop ([redacted])" if backend == "openai" else "end_turn ([redacted])"
        assert {r["finish_reason"] for r in rows} == {want}
    assert "served-[redacted]" in (tmp_path / "report" / "runs.csv").read_text()


def test_the_404_explanation_lists_no_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """A 404 is explained with the server's model list, which a hostile server fills with the key it was sent."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    models = [f"model-{KEY}", "other-model"]
    with FakeServer(models=models, plan=lambda prompt, attempt: "404") as server:
        code = main(["--model", "missing", "--backend", "openai", "--base-url", server.openai_url, "--dataset", "stsb",
                     "--limit", "3", "--results-dir", str(tmp_path / "r"), "--no-progress"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2
    assert "it serves 'model-[redacted]', 'other-model'" in err and KEY not in err
    assert files_holding(tmp_path, (KEY,)) == {}


class Proxy407(Proxy):
    """A forward proxy on 127.0.0.1 that wants other credentials: 407 to every request, quoting the
    Proxy-Authorization it got (as some do in their error page)."""

    def __init__(self) -> None:
        super().__init__(target=0)  # nothing is forwarded: every request gets the 407

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        self.seen.append(head.split("\r\n", 1)[0])
        auth = [h.split(":", 1)[1].strip() for h in head.split("\r\n") if h.lower().startswith("proxy-authorization:")]
        body = json.dumps({"error": {"message": f"credentials refused: {auth} (me:{PROXY_PASSWORD}?)"}}).encode()
        writer.write(
            b'HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="p"\r\n'
            b"Content-Type: application/json\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
        )
        await writer.drain()
        writer.close()


def test_a_407_on_an_http_base_url_stops_the_run_naming_the_proxy_and_echoes_no_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """An http:// base URL's requests go to the proxy itself, so its 407 is an HTTP reply: it was `bad_request`, a
    failed request each, with the proxy's echo of the credentials printed."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with Proxy407() as proxy:
        monkeypatch.setenv("HTTP_PROXY", f"http://me:{PROXY_PASSWORD}@127.0.0.1:{proxy.port}")
        code = main(["--model", "m", "--backend", "openai", "--base-url", "http://api.example.invalid/v1",
                     "--dataset", "stsb", "--limit", "4", "--concurrency", "1", "--results-dir", str(tmp_path / "r"),
                     "--no-progress"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("error: openai model 'm': proxy authentication required (HTTP 407)")
    assert "bad_request" not in err and "credentials refused: ['Basic [redacted]'] ([redacted]?)" in err
    assert PROXY_PASSWORD not in err and TOKEN not in err
    # Every request would get it: the run stopped at the first (after one GET of the server's /props, which asks a
    # --base-url server how many requests it serves at once, and one of its /metrics, which asks its queue:
    # calling/backends/provider.py capacity and queue)
    assert [s.split()[0] for s in proxy.seen] == ["GET", "GET", "POST"]
    assert proxy.seen[0].split()[1].endswith("/props") and proxy.seen[1].split()[1].endswith("/metrics")
    assert files_holding(tmp_path, (KEY, PROXY_PASSWORD, TOKEN)) == {}


@pytest.mark.parametrize(("backend", "variable"), [("openai", "OPENAI_API_KEY"), ("anthropic", "ANTHROPIC_API_KEY")])
def test_batch_answers_and_errors_hold_no_key_and_no_quote_of_the_prompt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, backend: str, variable: str
) -> None:
    """The batch path reads answers with the same `completion_from` and keeps its errors apart: both are cleaned."""
    monkeypatch.setenv(variable, KEY)

    def plan(prompt: str, attempt: int) -> str:
        return "400-quote" if len(prompt) % 2 else "ok"

    with FakeBatchServer(plan=plan, extras=echo_key) as server:
        url = server.openai_url if backend == "openai" else server.anthropic_url
        code = main(["--model", "echo-model", "--backend", backend, "--base-url", url, "--dataset", "stsb",
                     "--limit", "8", "--results-dir", str(tmp_path / "results"), "--run-id", "b", "--no-progress",
                     "--batch", "--batch-poll", "0.05"])  # fmt: skip
    printed = capsys.readouterr()
    rows = [json.loads(line) for line in (tmp_path / "results" / "b" / "samples.jsonl").read_text().splitlines()]
    failed = [r for r in rows if r["error"]]
    assert code == 3 and 0 < len(failed) < len(rows), printed.err  # 3: some queries have no prediction
    # OpenAI's error lines say "HTTP 400: ...", Anthropic's "<error type>: ...": either way, the quote is gone
    assert all(r["error"].endswith(": Input should be a valid list: input_value='[prompt text]'") for r in failed)
    assert {r["served_model"] for r in rows if not r["error"]} == {"served-[redacted]"}
    assert files_holding(tmp_path, (KEY,)) == {} and KEY not in printed.out + printed.err
