"""Certificates, proxies and unreachable hosts on the one HTTP path (harness/calling/backends/transport.py), against
servers on 127.0.0.1: tests/fake_server.py over https with a CA made here (trustme), and a small forward proxy
(below) that "resolves" every host to that server, so an answer for a host that does not exist can only have come
through it."""

from __future__ import annotations

import asyncio
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import certifi
import pytest
import trustme

from harness.calling.attempts import Attempts
from harness.calling.backends.base import PermanentError, RetryableError, Unreachable
from harness.calling.backends.embeddings import OpenAIEmbeddingBackend
from harness.calling.backends.openai import OpenAIBackend
from harness.calling.backends.transport import ssl_context
from harness.cli.main import main
from harness.types import Completion, Request
from tests.fake_server import FakeServer
from tests.servers.transformers_serve import free_port

HOST = "api.example.invalid"  # RFC 6761: never resolves; reached only through the test proxy
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "SSL_CERT_FILE", "SSL_CERT_DIR")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARS:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


class Proxy:
    """A forward proxy on 127.0.0.1 (its own thread and loop): CONNECT tunnels and absolute-form requests, every
    host sent to 127.0.0.1:`target`. `seen`: each request line; `auth`: each Proxy-Authorization header."""

    def __init__(self, target: int) -> None:
        self.target, self.seen, self.auth = target, [], []  # type: ignore[var-annotated]
        self.loop = asyncio.new_event_loop()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        line, *headers = head.decode("latin-1").split("\r\n")
        self.seen.append(line)
        self.auth += [h.split(":", 1)[1].strip() for h in headers if h.lower().startswith("proxy-authorization:")]
        method, target, version = line.split(" ")
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)
        if method == "CONNECT":
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        else:  # absolute-form: the origin gets the path only
            path = "/" + target.split("://", 1)[1].split("/", 1)[1]
            kept = [h for h in headers if h and not h.lower().startswith("proxy-")]
            up_writer.write(("\r\n".join([f"{method} {path} {version}", *kept]) + "\r\n\r\n").encode("latin-1"))

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            while data := await src.read(65536):
                dst.write(data)
            dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer), return_exceptions=True)

    def __enter__(self) -> Proxy:
        server = self.loop.run_until_complete(asyncio.start_server(self.handle, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


@pytest.fixture
def ca(tmp_path: Path) -> Iterator[tuple[trustme.CA, Path]]:
    authority = trustme.CA()
    pem = tmp_path / "ca.pem"
    authority.cert_pem.write_to_path(str(pem))
    yield authority, pem


def tls_server(authority: trustme.CA) -> FakeServer:
    server = FakeServer()
    server.ssl_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("127.0.0.1", HOST).configure_cert(server.ssl_context)
    return server


def send(backend: OpenAIBackend, prompt: str = "hello") -> Any:
    async def go() -> Any:
        try:
            return await backend.send(Request("0", prompt))
        finally:
            await backend.aclose()

    return asyncio.run(go())


def test_https_with_a_private_ca_stops_at_once_naming_ssl_cert_file_and_works_with_it(
    ca: tuple[trustme.CA, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 20 class 10: a certificate the trust store does not know is permanent (the run stops on the first),
    and the message says how to trust it; with SSL_CERT_FILE pointing at the CA the same server answers."""
    authority, pem = ca
    with tls_server(authority) as server:
        with pytest.raises(PermanentError) as err:
            send(OpenAIBackend("gpt-4o", "k", [server.openai_url]))
        assert err.value.fatal and "not trusted" in str(err.value) and "SSL_CERT_FILE" in str(err.value)
        assert not server.calls
        monkeypatch.setenv("SSL_CERT_FILE", str(pem))
        assert send(OpenAIBackend("gpt-4o", "k", [server.openai_url])).text
        assert len(server.calls) == 1


def test_an_untrusted_certificate_ends_the_run_in_one_line_without_retries(
    ca: tuple[trustme.CA, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    authority, _ = ca
    tries: list[str] = []
    one = Attempts.one

    async def counted(self: Attempts) -> Completion:
        tries.append(self.request.id)
        return await one(self)

    monkeypatch.setattr(Attempts, "one", counted)
    with tls_server(authority) as server:
        args = ["--model", "m", "--base-url", server.openai_url, "--dataset", "stsb", "--limit", "5",
                "--results-dir", str(tmp_path), "--run-id", "r", "--no-progress"]  # fmt: skip
        assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: openai model 'm': the TLS certificate of 127.0.0.1 is")
    assert "point SSL_CERT_FILE at that CA's PEM file" in err
    # At most one try per request (those already in flight when the first failed), none again: the default
    # retries would try each request ten times over minutes. A count, not a time a busy machine could stretch.
    assert 1 <= len(tries) <= 5 and len(set(tries)) == len(tries), tries
    assert not (tmp_path / "r").exists()


def test_without_ssl_cert_file_the_trust_store_is_certifis() -> None:
    """The SDKs' httpx trusts certifi's bundle, not the system's (a python.org macOS build has none)."""
    ours = {c["serialNumber"] for c in ssl_context().get_ca_certs()}
    bundle = {c["serialNumber"] for c in ssl.create_default_context(cafile=certifi.where()).get_ca_certs()}
    assert ours == bundle and len(ours) > 50


def test_an_unreadable_ssl_cert_file_stops_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "missing.pem"))
    with pytest.raises(PermanentError, match="SSL_CERT_FILE=.*missing.pem cannot be read") as err:
        send(OpenAIBackend("gpt-4o", "k", ["https://127.0.0.1:1/v1"]))
    assert err.value.fatal


@pytest.mark.parametrize("variable", ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"])
def test_a_proxy_variable_carries_http_requests(variable: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """ALL_PROXY alone is honoured too (as httpx does; aiohttp's trust_env would not)."""
    with FakeServer() as server, Proxy(server.port) as proxy:
        monkeypatch.setenv(variable, f"http://127.0.0.1:{proxy.port}")
        url = f"http://{HOST}:{server.port}/v1"
        assert send(OpenAIBackend("gpt-4o", "k", [url])).text
    assert proxy.seen == [f"POST {url}/chat/completions HTTP/1.1"]
    assert len(server.calls) == 1


def test_https_goes_through_https_proxy_in_a_tunnel(
    ca: tuple[trustme.CA, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    authority, pem = ca
    monkeypatch.setenv("SSL_CERT_FILE", str(pem))
    with tls_server(authority) as server, Proxy(server.port) as proxy:
        monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{proxy.port}")
        monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # the other scheme's proxy: not used
        assert send(OpenAIBackend("gpt-4o", "k", [f"https://{HOST}:{server.port}/v1"])).text
    assert proxy.seen == [f"CONNECT {HOST}:{server.port} HTTP/1.1"]
    assert server.calls[0].headers["Authorization"] == "Bearer k"  # inside the tunnel, the TLS is end to end


def test_no_proxy_hosts_go_direct(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeServer() as server:
        monkeypatch.setenv("ALL_PROXY", "http://127.0.0.1:9")  # nothing listens there
        monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
        assert send(OpenAIBackend("gpt-4o", "k", [server.openai_url])).text
        assert len(server.calls) == 1


def test_proxy_credentials_in_the_url_become_proxy_authorization(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeServer() as server, Proxy(server.port) as proxy:
        monkeypatch.setenv("HTTP_PROXY", f"http://me:s%40cret@127.0.0.1:{proxy.port}")
        assert send(OpenAIBackend("gpt-4o", "k", [f"http://{HOST}:{server.port}/v1"])).text
    assert proxy.auth == ["Basic bWU6c0BjcmV0"]  # base64("me:s@cret")
    assert all("proxy-authorization" not in {k.lower() for k in c.headers} for c in server.calls)


def test_the_sdks_typed_calls_take_the_same_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Embeddings (and the Batch APIs) go through the SDK's typed calls: over our session, so through the proxy."""
    with FakeServer() as server, Proxy(server.port) as proxy:
        monkeypatch.setenv("ALL_PROXY", f"http://127.0.0.1:{proxy.port}")
        completion = send(OpenAIEmbeddingBackend("text-embedding-3-small", "k", [f"http://{HOST}:{server.port}/v1"]))
    assert completion.text.startswith("[") and proxy.seen == [
        f"POST http://{HOST}:{server.port}/v1/embeddings HTTP/1.1"
    ]


def test_a_socks_proxy_is_refused_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ALL_PROXY", "socks5://user:pw@127.0.0.1:1080")
    with pytest.raises(PermanentError, match="only http:// and https:// proxies") as err:
        send(OpenAIBackend("gpt-4o", "k", ["http://127.0.0.1:1/v1"]))
    assert "pw" not in str(err.value)


@pytest.mark.parametrize(("code", "permanent"), [(socket.EAI_NONAME, True), (socket.EAI_AGAIN, False)])
def test_a_name_that_does_not_exist_is_permanent_a_busy_resolver_is_not(
    code: int, permanent: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 20 class 10 (DNS). The lookup is answered here (no query leaves the machine): aiohttp's resolver asks
    the event loop, which asks socket.getaddrinfo."""

    def lookup(host: str, *args: object, **kwargs: object) -> list[Any]:
        raise socket.gaierror(code, "Name or service not known" if permanent else "Temporary failure")

    monkeypatch.setattr(socket, "getaddrinfo", lookup)
    backend = OpenAIBackend("gpt-4o", "k", [f"http://{HOST}/v1"])
    with pytest.raises(PermanentError if permanent else RetryableError) as err:
        send(backend)
    if permanent:
        assert err.value.fatal and f"cannot resolve the host name {HOST!r}" in str(err.value)  # type: ignore[attr-defined]
        assert "HTTPS_PROXY" in str(err.value)
    else:
        assert isinstance(err.value, Unreachable)


def test_an_idle_connection_is_not_kept_as_long_as_uvicorn_keeps_it() -> None:
    """uvicorn (vLLM's server, transformers serve) closes a connection idle for its `timeout_keep_alive`; a client that
    keeps it longer reuses some just as they close, and those requests fail and are sent again (aiohttp's default of
    15 s did, against vLLM's server). Against real uvicorn at its defaults: a request after an idle spell shorter
    than uvicorn's but longer than ours goes on a new connection (the server sees another client port)."""
    uvicorn = pytest.importorskip("uvicorn")
    from harness.calling.backends.transport import KEEPALIVE, Link

    assert uvicorn.Config(app=None).timeout_keep_alive > KEEPALIVE  # its default, read from uvicorn itself
    ports: list[int] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await receive()
        ports.append(scope["client"][1])
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": b"{}"})

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        for _ in range(500):  # up to 5 s to start
            if server.started:
                break
            threading.Event().wait(0.01)
        assert server.started, "uvicorn did not start"

        async def two(idle: float) -> None:  # two requests, `idle` seconds apart
            link = Link(f"http://127.0.0.1:{port}/v1")
            try:
                for i in range(2):
                    if i:
                        await asyncio.sleep(idle)
                    response = await link.open("POST", f"http://127.0.0.1:{port}/v1/x", {}, b"{}")
                    await response.read()
                    response.release()
            finally:
                await link.session.close()

        asyncio.run(two(0.2))  # a short idle: the connection is reused
        asyncio.run(two(KEEPALIVE + 0.4))  # longer than ours, shorter than uvicorn's: a new one
    finally:
        server.should_exit = True
        thread.join(5)
    assert ports[0] == ports[1] and ports[2] != ports[3], ports
