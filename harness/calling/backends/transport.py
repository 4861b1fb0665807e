"""Every HTTP request the API backends make, on one library: one aiohttp session per base URL.

The lean path (harness/calling/backends/http.py) posts the SDK's own body bytes through `Link.session`; the SDKs'
typed calls (Batch APIs, embeddings) reach the same session through `SDKTransport`, an httpx transport the SDK
client is given. So every request meets the same rules, the ones the SDKs' httpx follows:

- Certificates: certifi's bundle (as the SDKs use), or `SSL_CERT_FILE` / `SSL_CERT_DIR` when set.
- Proxies: `HTTPS_PROXY` / `HTTP_PROXY` for their scheme, else `ALL_PROXY`, unless `NO_PROXY` names the host
  (urllib's `getproxies` and `proxy_bypass`, as httpx reads them). aiohttp's own `trust_env` misses `ALL_PROXY`
  and looks the environment up again on a worker thread for every request (and `~/.netrc` on another), so the
  proxy is chosen once per base URL here and passed to the session.
- Connections: happy eyeballs (aiohappyeyeballs, through aiohttp: the next address is tried 250 ms after the
  previous one stalls) and CONNECT_TIMEOUT per connection attempt, so a host whose first address drops packets
  is reached on its second, and a dead one is known in seconds, not after the whole --timeout.
- The pool: no cap of aiohttp's own (its default, 100, would queue requests that dispatch's limiter already let
  go at --concurrency 128): the limiter is the one ceiling, so the pool holds at most --concurrency connections.

`connection_error` turns aiohttp's failures into our retry policy, and names the fix for the permanent ones.
"""

from __future__ import annotations

import functools
import os
import socket
import ssl
import urllib.request
from collections.abc import AsyncIterator, Mapping
from typing import Any

import aiohttp
import certifi
import httpx2  # the SDKs' own HTTP library (openai>=3, anthropic>=1: pyproject.toml)
import yarl

from harness.calling.backends.base import PermanentError, RetryableError, Unreachable
from harness.calling.backends.bounded import MAX_REDIRECTS, read_capped, same_host_redirect
from harness.config.settings import ApiOptions

CONNECT_TIMEOUT = 10.0  # seconds for one connection attempt (DNS, TCP through happy eyeballs, TLS)
MAX_REPLY_MB = ApiOptions.max_reply_mb  # the most MB of one reply body read, decompressed (bounded.py)
HAPPY_EYEBALLS_DELAY = 0.25  # RFC 8305's recommended "connection attempt delay"
CERT_FIX = (
    "if the server's certificate is signed by a CA of your own (a company proxy, a local server), "
    "point SSL_CERT_FILE at that CA's PEM file (certifi's bundle is used otherwise)"
)
PROXY_FIX = "behind a proxy, set HTTPS_PROXY (or HTTP_PROXY, ALL_PROXY; NO_PROXY for hosts reached directly)"


def ssl_context() -> ssl.SSLContext:
    """Verification against certifi's bundle, or SSL_CERT_FILE / SSL_CERT_DIR when set (as httpx does)."""
    cafile = os.environ.get("SSL_CERT_FILE") or None
    capath = os.environ.get("SSL_CERT_DIR") or None
    return _context(cafile or (None if capath else certifi.where()), capath)


@functools.cache
def _context(cafile: str | None, capath: str | None) -> ssl.SSLContext:
    try:
        return ssl.create_default_context(cafile=cafile, capath=capath)
    except (OSError, ssl.SSLError) as e:  # a missing or unreadable file
        what = f"SSL_CERT_FILE={cafile}" if cafile and cafile != certifi.where() else f"SSL_CERT_DIR={capath}"
        raise PermanentError(f"{what} cannot be read as certificates: {e}", fatal=True) from None


def proxy_for(url: str) -> yarl.URL | None:
    """The proxy the environment names for `url`, None to go direct (urllib's rules: the scheme's variable,
    else ALL_PROXY; NO_PROXY's hosts go direct)."""
    target = yarl.URL(url)
    proxies = urllib.request.getproxies()
    if target.host is None or urllib.request.proxy_bypass(target.host):
        return None
    chosen = proxies.get(target.scheme) or proxies.get("all")
    if not chosen:
        return None
    proxy = yarl.URL(chosen if "://" in chosen else f"http://{chosen}")
    if proxy.scheme not in ("http", "https"):
        raise PermanentError(
            f"proxy {proxy.with_user(None)} for {target.host}: only http:// and https:// proxies are supported",
            fatal=True,
        )
    return proxy


class Link:
    """One base URL's aiohttp session (made inside the event loop that uses it), its proxy, whether it ever
    answered (a failure to reach a server that never answered may be permanent: `connection_error`)."""

    def __init__(self, base_url: str, timeout: float | None = None, max_reply_mb: float = MAX_REPLY_MB) -> None:
        self.base_url = base_url
        self.max_reply_bytes = int(max_reply_mb * 1024 * 1024)
        # A request's whole time (the backend's --timeout); the SDKs' typed calls pass their own (SDKTransport).
        connect = CONNECT_TIMEOUT if timeout is None else min(CONNECT_TIMEOUT, timeout)
        self.timeout = aiohttp.ClientTimeout(total=timeout, sock_connect=connect)
        # What dispatch sends (http.py Route.call) it bounds itself, each attempt by --timeout (attempts.py):
        # aiohttp times only the connection there, not the whole request a second time.
        self.attempt_timeout = aiohttp.ClientTimeout(total=None, sock_connect=connect)
        self.answered = False  # any HTTP reply at all, error statuses included
        self._session: aiohttp.ClientSession | None = None
        self._proxy: yarl.URL | None = None
        self._proxy_headers: dict[str, str] | None = None
        self._tunnel = True  # requests go in a CONNECT tunnel (https), or to the proxy itself (http)

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            proxy = proxy_for(self.base_url)
            if proxy is not None and proxy.user is not None:  # credentials in the URL: Proxy-Authorization,
                # which aiohttp sends in a CONNECT (https) from proxy_headers, and for http in the request's own
                credentials = {"Proxy-Authorization": aiohttp.encode_basic_auth(proxy.user, proxy.password or "")}
                self._proxy_headers = credentials
                self._tunnel = yarl.URL(self.base_url).scheme == "https"
                proxy = proxy.with_user(None)
            self._proxy = proxy
            https = yarl.URL(self.base_url).scheme == "https" or (proxy is not None and proxy.scheme == "https")
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(
                    limit=0,
                    ttl_dns_cache=300,
                    ssl=ssl_context() if https else True,
                    happy_eyeballs_delay=HAPPY_EYEBALLS_DELAY,
                ),
                timeout=self.timeout,
                cookie_jar=aiohttp.DummyCookieJar(),  # an API sets no cookie we need
                trust_env=False,  # the environment was read once, above
            )
        return self._session

    async def open(
        self,
        method: str,
        url: str | yarl.URL,
        headers: Mapping[str, str],
        data: bytes | None,
        timeout: aiohttp.ClientTimeout | None = None,
    ) -> aiohttp.ClientResponse:
        """Send a request; the response with its head read, its body not yet (the caller reads and releases it).
        Failures are our errors (`connection_error`)."""
        session = self.session
        if self._proxy_headers is not None and not self._tunnel:
            headers = {**headers, **self._proxy_headers}
        # A request with a body (the prompt) follows no redirect blindly: same_host_redirect (bounded.py) lets it
        # follow a 307/308 on its own host and refuses one to another host, which would be sent the prompt.
        try:
            for hop in range(MAX_REDIRECTS + 1):
                response = await session.request(
                    method, url, headers=headers, data=data, timeout=timeout or self.timeout, proxy=self._proxy,
                    proxy_headers=self._proxy_headers, allow_redirects=data is None,
                )  # fmt: skip
                target = same_host_redirect(url, response) if data is not None and hop < MAX_REDIRECTS else None
                if target is None:
                    break
                response.release()
                url = target
        except (aiohttp.ClientError, OSError, TimeoutError) as e:
            raise connection_error(e, self.base_url, self.answered) from None
        self.answered = True
        return response

    async def request(
        self,
        method: str,
        url: str | yarl.URL,
        headers: Mapping[str, str],
        data: bytes | None,
        timeout: aiohttp.ClientTimeout | None = None,
    ) -> tuple[int, Mapping[str, str], bytes]:
        """One request: status, headers and the whole (decoded) body; `ReplyTooLarge` past max_reply_bytes."""
        response = await self.open(method, url, headers, data, timeout)
        try:
            return response.status, response.headers, await read_capped(response, self.max_reply_bytes)
        except (aiohttp.ClientError, OSError, TimeoutError) as e:
            raise connection_error(e, self.base_url, True) from None
        finally:
            response.release()

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


def connection_error(e: BaseException, url: str, answered: bool) -> RetryableError | PermanentError:
    """An aiohttp failure under our policy. Permanent (the run stops at once, saying how to fix it): a
    certificate the trust store does not know, a host name that does not resolve (while the server never
    answered), a proxy that wants credentials. Unreachable (retried for --wait-for-server while no request was
    ever answered): refused, unreachable, no connection within CONNECT_TIMEOUT. Anything else is retried."""
    host = yarl.URL(url).host or url
    match e:
        case aiohttp.ClientConnectorCertificateError():
            return PermanentError(
                f"the TLS certificate of {host} is not trusted ({e.certificate_error}): {CERT_FIX}", fatal=True
            )
        case aiohttp.ClientConnectorSSLError() if "WRONG_VERSION_NUMBER" in str(e):
            return PermanentError(f"{host} does not speak TLS: use http:// in --base-url ({e})", fatal=True)
        case aiohttp.ClientConnectorDNSError() if not answered and _no_such_name(e.os_error):
            return PermanentError(
                f"cannot resolve the host name {host!r} ({e.os_error.strerror}): check --base-url; {PROXY_FIX}",
                fatal=True,
            )
        case aiohttp.ClientHttpProxyError() if e.status == 407:
            return PermanentError(
                "the proxy asks for credentials (HTTP 407): put them in the proxy variable's URL "
                "(http://user:password@host:port)",
                fatal=True,
            )
        case aiohttp.ClientProxyConnectionError():
            return Unreachable(f"cannot reach the proxy for {host}: {e.os_error}", url)
        case aiohttp.ClientConnectorError():
            return Unreachable(f"connection error: {_why(e.os_error)}", url)
        case aiohttp.ConnectionTimeoutError():
            return Unreachable(f"connection error: no connection to {host} within {CONNECT_TIMEOUT:g}s", url)
        case aiohttp.ClientPayloadError():
            return RetryableError(f"connection error: the reply was cut off ({e})")
        case TimeoutError():
            return RetryableError("request timed out")
    return RetryableError(f"connection error: {type(e).__name__}: {e}")


def _no_such_name(error: OSError) -> bool:
    """A lookup that says the name does not exist (not a resolver that is busy or briefly unreachable)."""
    return error.errno in (socket.EAI_NONAME, getattr(socket, "EAI_NODATA", socket.EAI_NONAME))


def _why(error: OSError) -> str:
    if isinstance(error, ConnectionRefusedError):
        return f"connection refused ({error})"
    return f"{type(error).__name__}: {error}"


class SDKTransport(httpx2.AsyncBaseTransport):
    """The SDKs' typed calls (Batch APIs, embeddings) over a Link's session: same certificates, proxy and pool.
    Failures are raised as our own errors; the SDK wraps them (APIConnectionError, their __cause__)."""

    # Framing and encoding are the sending library's: aiohttp sets them for what it sends and decodes.
    _HOP = frozenset({"host", "content-length", "transfer-encoding", "accept-encoding", "connection"})

    def __init__(self, link: Link) -> None:
        self.link = link

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        body = await request.aread()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in self._HOP}
        timeouts: Any = request.extensions.get("timeout")  # the SDK's, per read as httpx means it
        read = timeouts.get("read") if isinstance(timeouts, dict) else None
        timeout = aiohttp.ClientTimeout(sock_read=read, sock_connect=CONNECT_TIMEOUT) if read else None
        url = yarl.URL(str(request.url), encoded=True)
        response = await self.link.open(request.method, url, headers, body or None, timeout)
        # aiohttp decoded the body: its encoding and length headers no longer describe what the SDK reads.
        kept = [(k, v) for k, v in response.headers.items() if k.lower() not in ("content-encoding", "content-length")]
        return httpx2.Response(
            response.status, headers=kept, stream=_Body(response, self.link.base_url), request=request
        )

    async def aclose(self) -> None:
        """The Link is closed by its owner (the backend's Route), not by the SDK client."""


class _Body(httpx2.AsyncByteStream):
    """A reply's body as the SDK reads it, streamed (a batch's result file is read, and cached, as it arrives)."""

    def __init__(self, response: aiohttp.ClientResponse, url: str) -> None:
        self.response, self.url = response, url

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self.response.content.iter_chunked(65536):
                yield chunk
        except (aiohttp.ClientError, OSError, TimeoutError) as e:
            raise connection_error(e, self.url, True) from None

    async def aclose(self) -> None:
        self.response.release()
