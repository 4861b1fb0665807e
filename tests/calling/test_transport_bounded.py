"""Issue 30, items 6 and 7: what a server can make the wire do (harness/calling/backends/transport.py). A reply
body is read up to --max-reply-mb after decompression (a plain body, a gzip bomb, a chunked stream); a POST is
redirected only on its own host. The real openai SDK's bytes through our aiohttp transport, against 127.0.0.1."""

from __future__ import annotations

import asyncio
import gzip
import json
from pathlib import Path

import pytest
from aiohttp import web

from harness.calling.backends.base import PermanentError
from harness.calling.backends.openai import OpenAIBackend
from harness.calling.backends.transport import MAX_REPLY_MB
from harness.cli.main import main
from harness.config.settings import ApiOptions
from harness.types import Completion, Request
from tests.calling.test_hostile_replies import N, run_twice
from tests.fake_server import FakeServer, default_answer

MB = 1024 * 1024


def answer_of(size: int) -> bytes:
    """A chat reply whose text is "4" followed by `size` spaces: valid JSON, as large as asked."""
    reply = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "4" + " " * size},
                          "finish_reason": "stop"}], "model": "m"}  # fmt: skip
    return json.dumps(reply).encode()


class Big(FakeServer):
    """Answers every request with `how`: "plain" (declared length), "gzip" (a bomb: 8 MB from ~8 KB), "stream"
    (chunked, no length); `status` for error replies."""

    def __init__(self, how: str, size: int = 3 * MB, status: int = 200) -> None:
        super().__init__()
        self.how, self.size, self.status = how, size, status
        self.sent_bytes = 0

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._big)
        return app

    async def _big(self, request: web.Request) -> web.StreamResponse:
        self.calls.append(await request.read())  # type: ignore[arg-type]
        body = answer_of(self.size)
        if self.how == "gzip":
            packed = gzip.compress(body, 9)
            self.sent_bytes = len(packed)
            headers = {"Content-Encoding": "gzip", "Content-Type": "application/json"}
            return web.Response(body=packed, status=self.status, headers=headers)
        if self.how == "plain":
            return web.Response(body=body, status=self.status, content_type="application/json")
        response = web.StreamResponse(status=self.status, headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        for i in range(0, len(body), 65536):
            await response.write(body[i : i + 65536])
        await response.write_eof()
        return response


def send(server: FakeServer, max_reply_mb: float) -> Completion:
    async def go() -> Completion:
        backend = OpenAIBackend("m", "EMPTY", [server.openai_url], chat=True, max_reply_mb=max_reply_mb)
        try:
            return await backend.send(Request("q", "Sentence 1: a. Output:"))
        finally:
            await backend.aclose()

    return asyncio.run(go())


def test_the_documented_default_cap() -> None:
    assert MAX_REPLY_MB == ApiOptions.max_reply_mb == 32.0


@pytest.mark.parametrize("how", ["plain", "gzip", "stream"])
def test_a_reply_over_the_cap_is_kept_as_malformed_with_its_first_bytes(how: str) -> None:
    with Big(how, size=8 * MB if how == "gzip" else 3 * MB) as server:
        got = send(server, max_reply_mb=1)
    assert got.text == "" and got.malformed is not None and got.error is None
    assert got.malformed.startswith("too-large: the reply's body is over 1 MB")
    assert got.raw is not None and got.raw.startswith('{"choices"') and got.truncated  # cut at REPLY_CAP_BYTES
    if how == "gzip":
        assert server.sent_bytes < 64 * 1024  # the bomb: well under the cap on the wire


def test_a_reply_under_the_cap_is_read_as_before() -> None:
    with Big("gzip", size=2 * MB) as server:
        got = send(server, max_reply_mb=3)
    assert got.malformed is None and got.text == "4" + " " * (1_000_000 - 1)  # the text cap, as before


def test_an_error_reply_over_the_cap_is_still_an_error_with_its_message() -> None:
    with Big("stream", status=500) as server, pytest.raises(Exception, match=r"HTTP 500: \{\"choices\""):
        send(server, max_reply_mb=1)


def test_a_run_keeps_a_bomb_as_malformed_and_its_rerun_asks_for_none(tmp_path: Path) -> None:
    class Bomb(FakeServer):
        def _reply(self, prompt: str, reply: dict) -> web.Response:
            self.served += 1
            reply["choices"][0]["text"] += " " * (2 * MB)
            packed = gzip.compress(json.dumps(reply).encode(), 9)
            return web.Response(body=packed, headers={"Content-Encoding": "gzip", "Content-Type": "application/json"})

    with Bomb() as server:
        metrics, samples, rerun = run_twice(server, tmp_path, "--max-reply-mb", "1")
    assert rerun == 0 and metrics["reasons"] == {"malformed": N}
    assert {s["reason"] for s in samples} == {"malformed"}


def test_max_reply_mb_must_be_a_positive_number(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--dataset", "stsb", "--limit", "2"]
    assert main([*args, "--max-reply-mb", "0", "--results-dir", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == "error: --max-reply-mb must be a positive number, got 0.0"
    assert list(tmp_path.iterdir()) == []


# --- item 7: redirects of a request with a body ------------------------------------------------------------------


class Redirector(FakeServer):
    """A FakeServer that answers /v1/... itself and 307s /old/... to `to` + /v1/... (`to` "": itself)."""

    def __init__(self, to: str = "", status: int = 307) -> None:
        super().__init__()
        self.to, self.status, self.redirected = to, status, 0

    def app(self) -> web.Application:
        app = super().app()
        app.router.add_route("*", "/old/{tail:.*}", self._redirect)
        return app

    async def _redirect(self, request: web.Request) -> web.Response:
        self.redirected += 1
        target = (self.to or f"http://127.0.0.1:{self.port}") + "/v1/" + request.match_info["tail"]
        return web.Response(status=self.status, headers={"Location": target})


@pytest.mark.parametrize("status", [307, 308])
def test_a_post_redirected_to_another_host_is_refused_and_that_host_sent_nothing(status: int) -> None:
    with FakeServer() as elsewhere:
        with Redirector(to=f"http://localhost:{elsewhere.port}", status=status) as server:
            backend_url = f"http://127.0.0.1:{server.port}/old"

            async def go() -> None:
                backend = OpenAIBackend("m", "EMPTY", [backend_url], chat=True)
                try:
                    await backend.send(Request("q", "Sentence 1: a secret sentence. Output:"))
                finally:
                    await backend.aclose()

            with pytest.raises(PermanentError, match=f"redirected the request \\(HTTP {status}\\) to http://localhost"):
                asyncio.run(go())
        assert server.redirected == 1 and elsewhere.calls == []  # the prompt never left for the other host


def test_a_run_redirected_to_another_host_stops_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeServer() as elsewhere, Redirector(to=f"http://localhost:{elsewhere.port}") as server:
        args = ["--model", "m", "--base-url", f"http://127.0.0.1:{server.port}/old", "--dataset", "stsb"]
        code = main([*args, "--limit", "3", "--no-progress", "--results-dir", str(tmp_path)])
    assert code == 2 and elsewhere.calls == []
    err = capsys.readouterr().err
    assert "error:" in err and "not followed, as that would send the prompt to another host" in err


def test_a_redirect_on_the_same_host_is_followed() -> None:
    with Redirector() as server:

        async def go() -> Completion:
            backend = OpenAIBackend("m", "EMPTY", [f"http://127.0.0.1:{server.port}/old"], chat=True)
            try:
                return await backend.send(Request("q", "Sentence 1: a. Output:"))
            finally:
                await backend.aclose()

        got = asyncio.run(go())
    prompt = "Sentence 1: a. Output:"
    assert server.redirected == 1 and server.answered == [prompt] and got.text == default_answer(prompt)


def test_a_too_large_verdict_of_a_smaller_cap_is_not_another_runs_answer(tmp_path: Path) -> None:
    """Issue 41: two runs sharing a cache with different --max-reply-mb. The second, whose cap holds the replies,
    got the first run's too-large verdicts as its answers; now it asks again and reads them. A third run under
    the first's cap, and a rerun of the second, re-request nothing (0 paid answers bought twice)."""

    class Bomb(FakeServer):
        def _reply(self, prompt: str, reply: dict) -> web.Response:
            self.served += 1
            reply["choices"][0]["text"] += " " * (2 * MB)
            packed = gzip.compress(json.dumps(reply).encode(), 9)
            return web.Response(body=packed, headers={"Content-Encoding": "gzip", "Content-Type": "application/json"})

    def one(server: FakeServer, run_id: str, mb: str) -> tuple[int, dict]:
        args = ["--model", "m", "--base-url", server.openai_url, "--dataset", "stsb", "--limit", str(N)]
        args += ["--cache", str(tmp_path / "cache.sqlite"), "--no-progress", "--max-reply-mb", mb]
        before = len(server.calls)
        assert main([*args, "--results-dir", str(tmp_path), "--run-id", run_id]) == 0
        metrics = json.loads((tmp_path / run_id / "metrics.json").read_text())
        return len(server.calls) - before, metrics["reasons"]

    with Bomb() as server:
        assert one(server, "small", "1") == (N, {"malformed": N})
        assert one(server, "small-again", "1") == (0, {"malformed": N})  # the same cap: the verdict holds
        sent, reasons = one(server, "large", "8")
        assert sent == N and "malformed" not in reasons  # read under its own cap: answers
        assert one(server, "large-again", "8") == (0, reasons)
        assert one(server, "small-after", "1") == (0, reasons)  # an answer stored whole holds under any cap
