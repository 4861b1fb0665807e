"""The wire: every HTTP request the API backends make, on one library, aiohttp, one session per base URL (a Route,
several behind one backend); what a request sends is what the provider's SDK would send, captured once.

Why not the SDKs' own `create()` for every request: their typed call spends 2-3 ms of CPU per request on its typed
request transform and on building pydantic response objects, which caps a run at a few hundred requests a second on
two cores, far below what `vllm serve` with data parallelism answers (issue 12). So the SDK keeps what it is good at
and does it once per base URL: `capture` runs the SDK's own `create()` against an in-memory transport and keeps the
URL, every header (auth, API version, user agent, the SDK's platform headers) and the body's key order it produced.
Each request then posts `json.dumps(body)` with the SDK's own encoding settings, in that key order, with those
headers, through the base URL's `Link`: the server receives the bytes the SDK would have sent
(tests/calling/test_transport_lean.py compares them). An error status is raised as reading.py's `ErrorReply`, a 200
returned as its `Received`, both read there (harness/calling/backends/reading.py). The SDKs' typed calls (Batch
APIs, embeddings) reach the same session through `SDKTransport`, an httpx transport the SDK client is given. So
every request meets the same rules, the ones the SDKs' httpx follows:

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
  With several base URLs each attempt goes to the least busy one (`ClientPool`).

`connection_error` turns aiohttp's failures into our retry policy, and names the fix for the permanent ones.

What a server can make the wire do is bounded (issue 30):

- A reply body is read up to a cap (--max-reply-mb, settings.py `ApiOptions.max_reply_mb`), counted after
  decompression: a score takes a few bytes and a long thought with log-probabilities a few MB, but a 300 MB body
  took 700 MB of memory, and so did a 0.3 MB gzip that inflates to it. aiohttp inflates a compressed body in
  bounded steps as it is read, so stopping the read at the cap bounds the memory too. A 200 reply over the cap is
  kept as a malformed answer, reason too-large, its first bytes stored (reading.py); an error reply's first bytes
  still say what went wrong.
- A request with a body (the prompt: possibly C-STS text) follows a 307/308 only on its own host and port (or up
  from http to https on that host): a redirect to another host would send that host the prompt and score its
  answer, so it is refused, and the run stops saying where it was sent. Other redirects of a POST are not followed
  (aiohttp would turn them into a GET without the body): they are the error replies they are.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import socket
import ssl
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import aiohttp
import certifi
import httpx2  # the SDKs' own HTTP library (openai>=3, anthropic>=1: pyproject.toml)
import yarl
from multidict import CIMultiDict

from harness.calling.backends.base import PermanentError, RetryableError, Unreachable
from harness.calling.backends.gauges import queue_of
from harness.calling.backends.reading import ErrorReply, Received
from harness.calling.backends.served import served_identity
from harness.calling.limits import rate_limit
from harness.calling.redaction import secrets_of, url_secrets
from harness.config.checks import url_query
from harness.config.settings import ApiOptions
from harness.types import ServerQueue

CONNECT_TIMEOUT = 10.0  # seconds for one connection attempt (DNS, TCP through happy eyeballs, TLS)
MAX_REPLY_MB = ApiOptions.max_reply_mb  # the most MB of one reply body read, decompressed (read_capped)
HAPPY_EYEBALLS_DELAY = 0.25  # RFC 8305's recommended "connection attempt delay"
KEEPALIVE = 4.0  # seconds an idle connection is kept for reuse: under the 5 s after which uvicorn (vLLM's server,
# transformers serve, any FastAPI one) and cpp-httplib (llama.cpp's server) close it. With aiohttp's own 15 s, a
# request sent on a connection the server was closing that moment failed (ServerDisconnectedError) and was sent
# again: what a window held below its connections leaves idle for 5 s (tests/calling/test_transport.py)
MAX_REDIRECTS = 5  # 307/308 hops on the same host before the last reply is taken as it is
CHUNK = 65536
# Set by the sending library for every request: a captured value would be wrong (length), redundant, or (encoding)
# offer what aiohttp cannot decode; aiohttp offers the encodings it reads.
_TRANSPORT_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "accept-encoding", "connection"})
LISTING_TIMEOUT = 10.0  # seconds for GET /models, asked only to explain a 404
PROPS_TIMEOUT = 5.0  # seconds for GET /props (a server's slots), asked once before a run against --base-url
METRICS_TIMEOUT = 2.0  # seconds for GET /metrics (a server's queue), asked every QUEUE_POLL seconds (dispatch.py)
MAX_SLOTS = 65_536  # a larger `total_slots` is no number a server computes at once: not read
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


class ReplyTooLarge(Exception):
    """A reply body over the cap: its status, headers and the bytes read before the cap."""

    def __init__(self, status: int, headers: Mapping[str, str], head: bytes, cap: int, why: str) -> None:
        super().__init__(f"the reply's body is over {cap / 1024 / 1024:g} MB ({why}); --max-reply-mb raises the cap")
        self.status, self.headers, self.head = status, headers, head


async def read_capped(response: aiohttp.ClientResponse, cap: int) -> bytes:
    """The body, decoded, never more than `cap` bytes of it held (ReplyTooLarge past that)."""
    length = response.content_length
    if length is not None and length <= cap and not response.headers.get("Content-Encoding"):
        return await response.read()  # the common case: a short, plain body of a declared length
    body = bytearray()
    async for chunk in response.content.iter_chunked(CHUNK):
        body += chunk
        if len(body) > cap:
            raise ReplyTooLarge(response.status, response.headers, bytes(body[:cap]), cap, "it goes on past that")
    return bytes(body)


def same_host_redirect(url: str | yarl.URL, response: aiohttp.ClientResponse) -> yarl.URL | None:
    """Where a 307/308 reply to a request with a body may be followed: on the same host; None for any other reply.
    A redirect to another host (or from https to http) raises a PermanentError that stops the run."""
    location = response.headers.get("Location")
    if response.status not in (307, 308) or not location:
        return None
    source = yarl.URL(url) if isinstance(url, str) else url
    target = source.join(yarl.URL(location))
    same_host = (target.host or "").lower() == (source.host or "").lower()
    upgrade = source.scheme == "http" and target.scheme == "https"  # http -> https on the host: its default port
    if same_host and ((target.port == source.port and target.scheme == source.scheme) or upgrade):
        return target
    response.release()
    raise PermanentError(
        f"{source.host} redirected the request (HTTP {response.status}) to {target.with_query(None)}: not followed, "
        "as that would send the prompt to another host; if that is the server you mean, give it as --base-url",
        fatal=True,
    )


class Link:
    """One base URL's aiohttp session (made inside the event loop that uses it), its proxy, whether it ever
    answered (a failure to reach a server that never answered may be permanent: `connection_error`)."""

    def __init__(self, base_url: str, timeout: float | None = None, max_reply_mb: float = MAX_REPLY_MB) -> None:
        self.base_url = base_url
        self.max_reply_bytes = int(max_reply_mb * 1024 * 1024)
        # A request's whole time (the backend's --timeout); the SDKs' typed calls pass their own (SDKTransport).
        connect = CONNECT_TIMEOUT if timeout is None else min(CONNECT_TIMEOUT, timeout)
        self.timeout = aiohttp.ClientTimeout(total=timeout, sock_connect=connect)
        # What dispatch sends (Route.call below) it bounds itself, each attempt by --timeout (attempts.py):
        # aiohttp times only the connection there, not the whole request a second time.
        self.attempt_timeout = aiohttp.ClientTimeout(total=None, sock_connect=connect)
        self.answered = False  # any HTTP reply at all, error statuses included
        # What gave this URL, for an error that asks whether it is right: the user's flag, or the SDK's variable
        # ($OPENAI_BASE_URL, set in a shell profile and forgotten) that the backend read without it.
        self.named_by = "--base-url"
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
                    keepalive_timeout=KEEPALIVE,
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
        # A request with a body (the prompt) follows no redirect blindly: same_host_redirect (above) lets it
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
            raise connection_error(e, self.base_url, self.answered, self.named_by) from None
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
            raise connection_error(e, self.base_url, True, self.named_by) from None
        finally:
            response.release()

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


def connection_error(e: BaseException, url: str, answered: bool, named_by: str) -> RetryableError | PermanentError:
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
            return PermanentError(f"{host} does not speak TLS: use http:// in {named_by} ({e})", fatal=True)
        case aiohttp.ClientConnectorDNSError() if not answered and _no_such_name(e.os_error):
            return PermanentError(
                f"cannot resolve the host name {host!r} ({e.os_error.strerror}): check {named_by}; {PROXY_FIX}",
                fatal=True,
            )
        case aiohttp.ClientHttpProxyError() if e.status == 407:
            return PermanentError(
                "the proxy asks for credentials (HTTP 407): put them in the proxy variable's URL "
                "(http://user:password@host:port)",
                fatal=True,
            )
        case aiohttp.ClientProxyConnectionError():
            return Unreachable(f"cannot reach the proxy for {host}: {e.os_error}", url, named_by)
        case aiohttp.ClientConnectorError():
            return Unreachable(f"connection error: {_why(e.os_error)}", url, named_by)
        case aiohttp.ConnectionTimeoutError():
            return Unreachable(f"connection error: no connection to {host} within {CONNECT_TIMEOUT:g}s", url, named_by)
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

    _HOP = _TRANSPORT_HEADERS  # framing and encoding are the sending library's: aiohttp sets what it sends, decodes

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
        return httpx2.Response(response.status, headers=kept, stream=_Body(response, self.link), request=request)

    async def aclose(self) -> None:
        """The Link is closed by its owner (the backend's Route), not by the SDK client."""


class _Body(httpx2.AsyncByteStream):
    """A reply's body as the SDK reads it, streamed (a batch's result file is read, and cached, as it arrives)."""

    def __init__(self, response: aiohttp.ClientResponse, link: Link) -> None:
        self.response, self.link = response, link

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self.response.content.iter_chunked(65536):
                yield chunk
        except (aiohttp.ClientError, OSError, TimeoutError) as e:
            raise connection_error(e, self.link.base_url, True, self.link.named_by) from None

    async def aclose(self) -> None:
        self.response.release()


@dataclass(frozen=True)
class Template:
    """What the SDK sends to one base URL, captured once: the URL, the headers, the body's key order."""

    url: str
    headers: Mapping[str, str]
    order: tuple[str, ...]

    def encode(self, body: Mapping[str, Any]) -> bytes:
        """The body as the SDK encodes it (openai/_utils/_json.py `openapi_dumps`: compact separators, UTF-8
        kept as is, no NaN), its keys in the SDK's order; keys the template did not have go last."""
        ordered = {k: body[k] for k in self.order if k in body}
        if len(ordered) != len(body):
            ordered.update((k, v) for k, v in body.items() if k not in ordered)
        return json.dumps(ordered, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


class _Captured(Exception):
    """Raised by capture's in-memory transport once it has the request."""


async def capture(client: Any, create: Callable[[Any], Awaitable[Any]]) -> Template:
    """Run `create(sdk_client)` (the SDK's plain typed call: `with_raw_response` would add a header of its own)
    once against an in-memory transport and keep what the SDK would send."""
    seen: list[httpx2.Request] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        raise _Captured  # nothing to answer: the SDK would build (and validate) a typed reply for nothing

    mock = httpx2.AsyncClient(transport=httpx2.MockTransport(answer))
    try:
        await create(client.with_options(http_client=mock))
    except Exception:
        if not seen:  # the SDK refused before sending: a real error, the caller's to report
            raise
        # else: the SDK reports the stand-in's exception as a connection error; what it sent is all we wanted
    finally:
        await mock.aclose()
    request = seen[0]
    headers = {k: v for k, v in request.headers.items() if k.lower() not in _TRANSPORT_HEADERS}
    order = tuple(json.loads(request.content)) if request.content else ()
    return Template(str(request.url), headers, order)


class Route:
    """One base URL: its SDK client (for the template, and the SDK's typed calls), its Link (the aiohttp
    session every request goes through)."""

    def __init__(self, client: Any, link: Link, template: Template | None = None) -> None:
        self.client = client  # None: a provider without an SDK, whose `template` is given
        self.link = link
        self.template = template
        self._capturing: asyncio.Future[Template] | None = None
        self._target = yarl.URL(template.url, encoded=True) if template else yarl.URL()
        self._headers: CIMultiDict[str] = CIMultiDict(template.headers if template else {})
        self._props: dict[str, Any] | None = None  # GET /props, once asked (`props`)
        self._props_asked = False

    async def prepare(self, create: Callable[[Any], Awaitable[Any]]) -> Template:
        """The template, captured by the first caller while the others wait for it."""
        if self.template is not None:
            return self.template
        if self._capturing is None:
            self._capturing = asyncio.get_running_loop().create_future()
            try:
                template = await capture(self.client, create)
            except BaseException as e:
                self._capturing.set_exception(e)
                self._capturing.exception()  # retrieved here: a failed capture is raised to every waiter
                self._capturing = None
                raise
            self._target = yarl.URL(template.url, encoded=True)  # parsed once, not per request
            self._headers = CIMultiDict(template.headers)
            self.template = template
            self._capturing.set_result(template)
            return template
        return await asyncio.shield(self._capturing)

    async def call(
        self, body: Mapping[str, Any], create: Callable[[], Callable[[Any], Awaitable[Any]] | None]
    ) -> Received:
        """Post `body` (capturing the template with the SDK call `create()` makes, the first time only): the
        reply's body, unread (the backend reads it with reading.py `read_reply`, which never loses it), and what
        its rate-limit headers said. An error status is raised as ErrorReply."""
        template = self.template
        if template is None:
            sdk_call = create()
            assert sdk_call is not None, "a route without a template captures one from its SDK"
            template = await self.prepare(sdk_call)
        try:
            status, headers, content = await self.link.request(
                "POST", self._target, self._headers, template.encode(body), self.link.attempt_timeout
            )
        except ReplyTooLarge as e:  # an error's message is in its first bytes; an answer is kept as malformed
            if e.status >= 300:
                raise ErrorReply(template.url, e.status, e.headers, e.head) from None
            return Received(e.head, rate_limit(e.headers), str(e))
        if status >= 300:
            raise ErrorReply(template.url, status, headers, content)
        return Received(content, rate_limit(headers))

    async def models(self) -> list[str] | None:
        """The model names the server lists at GET /models, None when it lists none (or cannot be asked): a hint
        for an error message, never a gate (servers list names differently from what they accept)."""
        headers = {k: v for k, v in self._headers.items() if k.lower() != "content-type"}
        base = yarl.URL(self.link.base_url)
        url = base.with_path(base.path.rstrip("/") + "/models").with_query(base.query)  # a `?api-key=` kept
        try:
            status, _, content = await self.link.request(
                "GET", url, headers, None, aiohttp.ClientTimeout(total=LISTING_TIMEOUT)
            )
            data = json.loads(content).get("data") if status == 200 else None
            return [m["id"] for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)] if data else None
        except (RetryableError, PermanentError, ValueError, AttributeError, TypeError):
            return None

    async def props(self) -> dict[str, Any] | None:
        """What llama.cpp's server says of itself at GET /props (at its root, beside /v1): its slots, the model file
        it serves, its chat template. Asked once per route (the slots and the cache key both read it); None for any
        other reply, or none in PROPS_TIMEOUT (the reply is bounded as every reply is: Link's --max-reply-mb)."""
        if self._props_asked:
            return self._props
        self._props_asked = True
        content = await self._beside("props", PROPS_TIMEOUT)
        try:
            props = json.loads(content) if content is not None else None
        except (ValueError, RecursionError):
            return None
        self._props = props if isinstance(props, dict) else None
        return self._props

    async def queue(self) -> ServerQueue | None:
        """What the server says of its queue now, at GET /metrics beside /v1 (vLLM's gauges of the requests it
        computes and of those waiting: gauges.py); None for any other reply, or none in METRICS_TIMEOUT. Asked
        every QUEUE_POLL seconds while requests are out (dispatch.py), of servers named with --base-url only."""
        content = await self._beside("metrics", METRICS_TIMEOUT)
        return None if content is None else queue_of(content)

    async def _beside(self, name: str, timeout: float) -> bytes | None:
        """GET `name` at the server's root, beside /v1 (llama.cpp's /props, vLLM's /metrics), with the route's own
        headers and query: the body of a 200, bounded as every reply is (Link's --max-reply-mb); None otherwise."""
        url = yarl.URL(self.link.base_url)
        root = url.with_path(url.path.rstrip("/").removesuffix("/v1").rstrip("/") + "/" + name).with_query(url.query)
        headers = {k: v for k, v in self._headers.items() if k.lower() != "content-type"}
        try:
            status, _, content = await self.link.request(
                "GET", root, headers, None, aiohttp.ClientTimeout(total=timeout)
            )
        except (RetryableError, PermanentError, ReplyTooLarge):
            return None
        return content if status == 200 else None

    async def slots(self) -> int | None:
        """How many requests the server computes at once, where it says: llama.cpp's /props `total_slots`, its
        --parallel. None where it does not say: such a server is watched instead (harness/calling/congestion.py)."""
        slots = (await self.props() or {}).get("total_slots")
        return slots if type(slots) is int and 1 <= slots <= MAX_SLOTS else None

    async def served(self) -> dict[str, Any] | None:
        """What the server says it serves, enough to stand for its address in the response-cache key
        (harness/calling/backends/served.py); None where it says too little."""
        return served_identity(await self.props(), self.link.base_url)

    async def aclose(self) -> None:
        await self.link.aclose()
        if self.client is not None:
            await self.client.close()


def open_routes(
    urls: Sequence[str | None],
    timeout: float,
    make_client: Callable[[str | None, httpx2.AsyncClient], Any],
    max_reply_mb: float = MAX_REPLY_MB,
) -> list[Route]:
    """One Route per base URL (None: the SDK's default): `make_client(url, http_client)` builds the SDK client
    on an httpx client whose transport is the Route's aiohttp session, so the SDK's own calls go there too."""
    routes = []
    for url in urls:
        link = Link(url or "", timeout, max_reply_mb)
        # A gateway's `?api-key=` goes to the SDK apart (`default_query`): it appends an endpoint's path to the base
        # URL as text, which would put the path after the query.
        base, _, query = url.partition("?") if url else (url, "", "")
        client = make_client(base, httpx2.AsyncClient(transport=SDKTransport(link), follow_redirects=True))
        if query:
            client = client.with_options(default_query=url_query(f"{base}?{query}"))
        # as the SDK resolved it (OPENAI_BASE_URL & co.), with the query (its credentials are redacted: route_secrets)
        link.base_url = str(client.base_url) + (f"?{query}" if query else "")
        routes.append(Route(client, link))
    return routes


def plain_routes(
    urls: Sequence[str], timeout: float, endpoint: str, headers: Mapping[str, str], max_reply_mb: float = MAX_REPLY_MB
) -> list[Route]:
    """One Route per base URL for a provider without an SDK: `headers` and the body as given, to url + endpoint."""
    routes = []
    for url in urls:
        parts = urllib.parse.urlsplit(url)  # the endpoint goes after the path, before a query (`?api-key=`)
        target = parts._replace(path=parts.path.rstrip("/") + endpoint).geturl()
        template = Template(target, {"Content-Type": "application/json", **headers}, ())
        routes.append(Route(None, Link(url, timeout, max_reply_mb), template))
    return routes


def route_secrets(key: str, routes: Sequence[Route]) -> tuple[str, ...]:
    """What a backend must redact: its API key and, where a route's proxy URL carries credentials, every form a
    proxy may echo back (the password, `user:password`, the Proxy-Authorization token `Link` sends), and the
    credentials a base URL carries (`?api-key=`, `https://user:pass@host`: redaction.py `url_secrets`)."""
    found = [key]
    for route in routes:
        found += url_secrets(route.link.base_url)
        try:
            proxy = proxy_for(route.link.base_url)
        except PermanentError:
            continue  # an unusable proxy: the first request says so, and nothing was sent to it
        if proxy is None or proxy.user is None:
            continue
        password = proxy.password or ""
        token = aiohttp.encode_basic_auth(proxy.user, password).removeprefix("Basic ")
        found += [password, proxy.raw_password or "", f"{proxy.user}:{password}", token]
    return secrets_of(found)


C = TypeVar("C")


class ClientPool(Generic[C]):
    """One SDK client per base URL; each attempt leases the least busy one (round-robin among equals)."""

    def __init__(self, clients: Sequence[C]) -> None:
        self.clients = list(clients)
        self._in_flight = [0] * len(self.clients)
        self._turn = 0

    @contextlib.contextmanager
    def lease(self) -> Iterator[C]:
        n = len(self.clients)
        start, self._turn = self._turn, (self._turn + 1) % n
        i = min(((start + k) % n for k in range(n)), key=lambda j: self._in_flight[j])
        self._in_flight[i] += 1
        try:
            yield self.clients[i]
        finally:
            self._in_flight[i] -= 1

    async def aclose(self) -> None:
        """Close every client (inside the event loop that used them)."""
        for c in self.clients:
            await c.close()  # type: ignore[attr-defined]
