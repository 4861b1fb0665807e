"""Our HTTP/1.1 connections (harness/calling/backends/connection.py) against a raw socket server on 127.0.0.1.

The server here writes exact bytes, so each reply framing (Content-Length, chunked, close-delimited, gzip) and
each fault (a stale keep-alive connection, a reply cut off, garbage, a hang) is what the test says it is. The
same code is checked against real servers elsewhere: uvicorn in tests/calling/test_real_server.py and aiohttp's
in tests/calling/test_http.py (byte-identical requests to the SDKs').
"""

from __future__ import annotations

import asyncio
import datetime
import gzip
import ipaddress
import ssl
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from harness.calling.backends import connection
from harness.calling.backends.connection import ConnectionDropped, Origin

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter, int], Awaitable[None]]


def reply(body: bytes, *headers: str, status: str = "200 OK") -> bytes:
    head = "".join(f"{h}\r\n" for h in headers)
    return f"HTTP/1.1 {status}\r\n{head}Content-Length: {len(body)}\r\n\r\n".encode() + body


async def read_request(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    """(head, body) of one request; (b"", b"") at EOF."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return b"", b""
    length = next(
        int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
    )
    return head, await reader.readexactly(length)


class Server:
    """Counts connections; `handler(reader, writer, n)` serves connection number n (from 0)."""

    def __init__(self, handler: Handler, ssl_context: ssl.SSLContext | None = None) -> None:
        self.handler, self.ssl = handler, ssl_context
        self.connections = 0

    async def __aenter__(self) -> Server:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            n, self.connections = self.connections, self.connections + 1
            try:
                await self.handler(reader, writer, n)
            finally:
                writer.close()

        self.server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=self.ssl)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.server.close()

    def url(self, scheme: str = "http") -> str:
        return f"{scheme}://127.0.0.1:{self.port}/v1/chat/completions"


def run(coro: Coroutine[Any, Any, None]) -> None:
    asyncio.run(coro)


def keep_alive(*replies: bytes) -> Handler:
    """Answer requests on one connection with `replies` in turn, then wait for the client to close."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        for r in replies:
            if not (await read_request(reader))[0]:
                return
            writer.write(r)
            await writer.drain()
        await reader.read()

    return handler


def test_one_write_carries_head_headers_length_and_body_and_connections_are_reused() -> None:
    seen: list[tuple[bytes, bytes]] = []
    ports: list[int] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        while (request := await read_request(reader))[0]:
            seen.append(request)
            writer.write(reply(b'{"n": %d}' % len(seen), "Content-Type: application/json"))

    async def main() -> None:
        async with Server(handler) as server:
            ports.append(server.port)
            origin = Origin(server.url(), {"Authorization": "Bearer k", "X-Stainless-Lang": "python"})
            for body in (b'{"a":1}', '{"é":2}'.encode()):
                status, headers, content = await origin.post(body)
                assert status == 200 and headers["content-type"] == "application/json"
            assert content == b'{"n": 2}'
            assert server.connections == 1  # kept alive, reused
            origin.close()

    run(main())
    head, body = seen[1]
    assert head.decode().split("\r\n") == [
        "POST /v1/chat/completions HTTP/1.1",
        f"Host: 127.0.0.1:{ports[0]}",
        "Authorization: Bearer k",
        "X-Stainless-Lang: python",
        "Accept-Encoding: gzip",
        f"Content-Length: {len(body)}",
        "",
        "",
    ]
    assert body == '{"é":2}'.encode()


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        (b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{"a"\r\n5\r\n: 1}\n\r\n0\r\n\r\n', b'{"a": 1}\n'),
        (b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n", b'{"zipped": true}'),
        (b'HTTP/1.0 200 OK\r\n\r\n{"until": "close"}', b'{"until": "close"}'),
    ],
    ids=["chunked", "gzip", "close-delimited"],
)
def test_reply_framings(raw: bytes, want: bytes) -> None:
    if b"gzip" in raw:
        packed = gzip.compress(want)
        raw = raw % len(packed) + packed

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        await read_request(reader)
        writer.write(raw)
        if raw.startswith(b"HTTP/1.0"):
            writer.close()  # the close ends the body
        else:
            await reader.read()

    async def main() -> None:
        async with Server(handler) as server:
            origin = Origin(server.url(), {})
            status, _, body = await origin.post(b"{}")
            assert (status, body) == (200, want)
            origin.close()

    run(main())


def test_a_connection_the_server_closed_while_idle_is_replaced_without_an_error() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        await read_request(reader)
        writer.write(reply(b"{}"))  # says keep-alive (HTTP/1.1), then closes: a server's idle timeout
        await writer.drain()

    async def main() -> None:
        async with Server(handler) as server:
            origin = Origin(server.url(), {})
            assert (await origin.post(b"{}"))[0] == 200
            await asyncio.sleep(0.05)  # the close arrives while the connection is idle
            assert (await origin.post(b"{}"))[0] == 200
            # Closed before its reuse was tried (noticed idle), or tried and replaced: either way a new one.
            assert server.connections == 2
            origin.close()

    run(main())


def test_a_reused_connection_that_drops_the_request_unanswered_is_retried_once_on_a_new_one() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        await read_request(reader)
        writer.write(reply(b'{"first": 1}'))
        await writer.drain()
        if n == 0:
            await read_request(reader)  # the second request arrives on the kept connection: close, no answer
            writer.transport.abort()
            return
        await reader.read()

    async def main() -> None:
        async with Server(handler) as server:
            origin = Origin(server.url(), {})
            await origin.post(b"{}")
            assert (await origin.post(b"{}"))[2] == b'{"first": 1}'  # answered by connection 1
            assert server.connections == 2
            origin.close()

    run(main())


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        (b'HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n{"cut', "closed the connection before a whole reply"),
        (b"SMTP ready\r\n\r\n", "not HTTP/1.1"),
        (b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 4\r\n\r\nnope", "gzip body is corrupt"),
    ],
    ids=["cut off", "not http", "bad gzip"],
)
def test_a_broken_reply_on_a_new_connection_is_an_error(raw: bytes, error: str) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        await read_request(reader)
        writer.write(raw)
        await writer.drain()

    async def main() -> None:
        async with Server(handler) as server:
            with pytest.raises(ConnectionDropped, match=error):
                await Origin(server.url(), {}).post(b"{}")
            assert server.connections == 1  # a new connection's failure is not retried here (dispatch retries)

    run(main())


def test_a_reply_larger_than_the_cap_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(connection, "MAX_BODY", 1000)

    async def main() -> None:
        async with Server(keep_alive(reply(b"x" * 5000))) as server:
            with pytest.raises(ConnectionDropped, match="larger than"):
                await Origin(server.url(), {}).post(b"{}")

    run(main())


def test_a_timeout_closes_the_connection_so_a_late_reply_meets_no_other_request() -> None:
    closed = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        await read_request(reader)
        if n == 0:
            await reader.read()  # no answer; returns when the client closes
            closed.set()
            return
        writer.write(reply(b'{"second": 2}'))
        await reader.read()

    async def main() -> None:
        async with Server(handler) as server:
            origin = Origin(server.url(), {}, timeout=0.2)
            with pytest.raises(TimeoutError, match="no reply within 0.2s"):
                await origin.post(b"{}")
            await asyncio.wait_for(closed.wait(), 5)
            assert (await origin.post(b"{}"))[2] == b'{"second": 2}'
            assert server.connections == 2
            origin.close()

    run(main())


def test_a_cancelled_request_closes_its_connection() -> None:
    async def main() -> None:
        async with Server(keep_alive()) as server:
            origin = Origin(server.url(), {})
            task = asyncio.ensure_future(origin.post(b"{}"))
            await asyncio.sleep(0.1)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert origin._idle == []  # not kept for reuse

    run(main())


def _self_signed(tmp: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key (cryptography, a dependency)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp / "cert.pem", tmp / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


def test_tls_verifies_the_server_against_the_systems_trust_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = _self_signed(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)

    async def main() -> None:
        async with Server(keep_alive(reply(b'{"tls": 1}')), context) as server:
            with pytest.raises(ssl.SSLCertVerificationError):  # not trusted: refused
                await Origin(server.url("https"), {}).post(b"{}")
            monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # trusted (OpenSSL's own variable): answered
            origin = Origin(server.url("https"), {})
            assert (await origin.post(b"{}"))[2] == b'{"tls": 1}'
            origin.close()

    run(main())


def test_a_host_name_is_looked_up_once_for_all_connections_and_each_address_is_tried() -> None:
    """localhost may list ::1 first; the server listens on 127.0.0.1 only, so a refused address must fall
    through to the next. Eight requests at once open eight connections from one lookup."""
    lookups: list[str] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        real = loop.getaddrinfo

        async def counted(host: str, *args: object, **kwargs: object) -> object:
            lookups.append(host)
            return await real(host, *args, **kwargs)  # type: ignore[arg-type]

        loop.getaddrinfo = counted  # type: ignore[method-assign, assignment]
        async with Server(keep_alive(reply(b'{"ok": 1}'))) as server:
            origin = Origin(f"http://localhost:{server.port}/v1", {})
            replies = await asyncio.gather(*(origin.post(b"{}") for _ in range(8)))
            assert [r[2] for r in replies] == [b'{"ok": 1}'] * 8
            assert server.connections == 8
            origin.close()

    run(main())
    assert lookups.count("localhost") == 1


def test_only_http_urls() -> None:
    with pytest.raises(ValueError, match="not an http"):
        Origin("ftp://example.org/v1", {})
