"""HTTP/1.1 keep-alive connections for one origin: a request is one write, a reply is parsed in C (httptools).

Why not aiohttp's ClientSession: per request it builds a request object, merges headers, starts a writer task
and a timer, and wraps the reply in a response object; at 64-128 requests in flight that was ~40 % of our
dispatch CPU (issue 12's profile). An API call needs none of it: the head (request line and headers) is fixed
per base URL, so it is encoded once (`head`), and each request writes that head, its Content-Length and its body
in one `transport.write`. The reply is parsed by llhttp through httptools (the parser uvicorn uses); a reply
kept open (HTTP/1.1 keep-alive) is reused LIFO. A request that times out (the backend's own timeout, one timer
handle; dispatch also bounds each attempt) or is cancelled closes its connection, so a late reply never lands
on the next request.

Scope, on purpose: POST with a body, `Content-Length` or chunked or close-delimited replies, gzip replies
(we ask for nothing else), TLS with the system's default verification (as aiohttp did). Proxies are not
spoken here: with a proxy configured for a URL, http.py sends through aiohttp, which speaks them.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import zlib
from collections.abc import Mapping
from typing import Any, cast
from urllib.parse import urlsplit

import httptools

DNS_TTL = 300.0  # seconds a host's looked-up addresses are reused
MAX_BODY = 64 * 1024 * 1024  # a reply larger than this is not an API answer; refuse it rather than hold it


class ConnectionDropped(ConnectionError):
    """The connection closed (or sent something unparseable) before a whole reply arrived."""


class Origin:
    """scheme://host:port of one base URL, the encoded head for its path, and its idle connections."""

    def __init__(self, url: str, headers: Mapping[str, str], timeout: float | None = None) -> None:
        self.timeout = timeout
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.ssl: ssl.SSLContext | None = ssl.create_default_context() if parts.scheme == "https" else None
        default_port = parts.port is None or parts.port == (443 if parts.scheme == "https" else 80)
        host = self.host if ":" not in self.host else f"[{self.host}]"  # an IPv6 literal keeps its brackets
        authority = host if default_port else f"{host}:{self.port}"
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        lines = [f"POST {target} HTTP/1.1", f"Host: {authority}"]
        lines += [f"{k}: {v}" for k, v in headers.items() if k.lower() != "accept-encoding"]
        lines.append("Accept-Encoding: gzip")  # the one encoding we decode (zlib); the SDKs offer more
        # Header values are the SDK's (already validated); latin-1 is HTTP's byte mapping for them.
        self.head = ("\r\n".join(lines) + "\r\nContent-Length: ").encode("latin-1")
        self._idle: list[_Connection] = []
        self._lookup: asyncio.Future[list[tuple[Any, ...]]] | None = None
        self._looked_up = 0.0

    async def post(self, body: bytes) -> tuple[int, dict[str, str], bytes]:
        """Status, headers (lower-case names; a repeated header keeps its last value) and body of one POST.
        ConnectionDropped/OSError when the connection fails. A reused connection that the server had closed
        while idle (it sent nothing back) is retried once on a new one, as any HTTP client does."""
        data = b"%b%d\r\n\r\n%b" % (self.head, len(body), body)
        while self._idle:
            conn = self._idle.pop()
            if conn.usable():
                try:
                    return await self._exchange(conn, data)
                except ConnectionDropped:
                    if conn.received:
                        raise  # it had started to answer: not a stale connection, a failed request
                break
        return await self._exchange(await self._connect(), data)

    async def _connect(self) -> _Connection:
        """A new connection to the first address that takes it (TLS checks the name, not the address)."""
        loop = asyncio.get_running_loop()
        error: OSError | None = None
        for family, *_, address in await self._addresses():
            try:
                _, conn = await loop.create_connection(
                    _Connection, address[0], address[1], family=family, ssl=self.ssl,
                    server_hostname=self.host if self.ssl else None,
                )  # fmt: skip
                return conn
            except OSError as e:
                error = e
        assert error is not None  # getaddrinfo returns at least one address or raises
        raise error

    async def _addresses(self) -> list[tuple[Any, ...]]:
        """The host's addresses, looked up once per DNS_TTL and shared: a run opening 128 connections at once
        would otherwise make 128 lookups through the loop's few resolver threads (aiohttp cached them too)."""
        loop = asyncio.get_running_loop()
        if self._lookup is None or loop.time() > self._looked_up + DNS_TTL:
            self._lookup = asyncio.ensure_future(loop.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM))
            self._looked_up = loop.time()
        lookup = self._lookup
        try:
            return await asyncio.shield(lookup)
        except OSError:
            if self._lookup is lookup:
                self._lookup = None  # a failed lookup is not kept: the next connection asks again
            raise

    async def _exchange(self, conn: _Connection, data: bytes) -> tuple[int, dict[str, str], bytes]:
        reply = conn.send(data)
        timer = None
        if self.timeout is not None:
            timer = asyncio.get_running_loop().call_later(self.timeout, conn.expire, self.timeout)
        try:
            status, headers, body = await reply
        except BaseException:
            conn.close()  # cancelled, timed out or failed: a late reply must not meet another request
            raise
        finally:
            if timer is not None:
                timer.cancel()
        if conn.keep_alive:
            self._idle.append(conn)
        else:
            conn.close()
        return status, headers, body

    def close(self) -> None:
        while self._idle:
            self._idle.pop().close()


class _Connection(asyncio.Protocol):
    """One TCP (or TLS) connection: one request at a time, its reply parsed as it arrives."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.reply: asyncio.Future[tuple[int, dict[str, str], bytes]] | None = None
        self.received = False  # any byte of the current reply
        self.keep_alive = False
        self.lost = False
        self.on_message_begin()

    def on_message_begin(self) -> None:
        """(httptools callback, and before each request) nothing of a reply parsed yet."""
        self.headers: dict[str, str] = {}
        self.body: list[bytes] = []
        self.size = 0
        self.headers_done = False
        self.framed = False  # the reply has Content-Length or chunked (else it ends when the connection does)

    # -- asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's transports don't subclass asyncio's

    def data_received(self, data: bytes) -> None:
        if self.reply is None or self.reply.done():  # bytes nobody asked for: the connection can't be trusted
            self.close()
            return
        self.received = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as e:
            self._fail(ConnectionDropped(f"the reply is not HTTP/1.1: {e}"))

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        if self.reply is None or self.reply.done():
            return
        if self.headers_done and not self.framed:  # close-delimited body: the close is its end
            self.on_message_complete()
        else:
            why = f": {exc}" if exc else ""
            self._fail(ConnectionDropped(f"the server closed the connection before a whole reply{why}"))

    # -- httptools callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        key = name.decode("latin-1").lower()
        self.headers[key] = value.decode("latin-1")
        if key in ("content-length", "transfer-encoding"):
            self.framed = True

    def on_headers_complete(self) -> None:
        self.headers_done = True

    def on_body(self, body: bytes) -> None:
        self.size += len(body)
        if self.size > MAX_BODY:
            self._fail(ConnectionDropped(f"the reply is larger than {MAX_BODY // 2**20} MiB"))
            return
        self.body.append(body)

    def on_message_complete(self) -> None:
        if self.reply is None or self.reply.done():
            return
        status = self.parser.get_status_code()
        if 100 <= status < 200:  # an interim reply (e.g. 100 Continue): the real one follows
            return
        self.keep_alive = self.parser.should_keep_alive() and not self.lost
        body = b"".join(self.body)
        if self.headers.get("content-encoding", "").strip().lower() == "gzip":
            try:
                body = zlib.decompress(body, wbits=47)  # 32 + 15: a gzip (or zlib) header, read automatically
            except zlib.error as e:
                self._fail(ConnectionDropped(f"the reply's gzip body is corrupt: {e}"))
                return
        self.reply.set_result((status, self.headers, body))

    # -- ours
    def usable(self) -> bool:
        return not self.lost and self.transport is not None and not self.transport.is_closing()

    def send(self, data: bytes) -> asyncio.Future[tuple[int, dict[str, str], bytes]]:
        assert self.transport is not None
        self.reply = asyncio.get_running_loop().create_future()
        self.received = self.keep_alive = False
        self.on_message_begin()  # no state of the previous reply may stand for this one
        self.transport.write(data)
        return self.reply

    def expire(self, timeout: float) -> None:
        self._fail(TimeoutError(f"no reply within {timeout:g}s"))

    def _fail(self, error: Exception) -> None:
        if self.reply is not None and not self.reply.done():
            self.reply.set_exception(error)
        self.close()

    def close(self) -> None:
        self.keep_alive = False
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()
