"""The API backends' lean request path: the SDK decides what is sent, we send it.

Why: the SDKs' typed `create()` spends 2-3 ms of CPU per request on its typed request transform and on
building pydantic response objects, which caps a run at a few hundred requests a second on two cores, far
below what `vllm serve` with data parallelism answers (issue 12). So the SDK keeps what it is good at and
does it once per base URL: `capture` runs the SDK's own `create()` against an in-memory transport and keeps
the URL, every header (auth, API version, user agent, the SDK's platform headers) and the body's key order
it produced. Each request then posts `json.dumps(body)` with the SDK's own encoding settings, in that key
order, with those headers, over keep-alive HTTP/1.1 connections of our own (connection.py; through aiohttp
when a proxy is configured for the URL): the server receives the bytes the SDK would have sent
(tests/calling/test_http.py compares them). An error reply becomes the SDK's own exception type
(`client._make_status_error_from_response`), so each backend's `sdk_errors` maps it exactly as before; a
reply is read with `json.loads` into the few fields a Completion needs (each backend's `completion_from`).
"""

from __future__ import annotations

import asyncio
import json
import urllib.parse
import urllib.request
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
import yarl

try:  # the SDKs' own HTTP library: httpx2 in current releases, httpx before
    import httpx2
except ImportError:  # pragma: no cover - an older SDK
    import httpx as httpx2  # type: ignore[no-redef]

from harness.calling.backends.base import RetryableError
from harness.calling.backends.connection import ConnectionDropped, Origin
from harness.calling.limits import rate_limit
from harness.types import RateLimit

# Set by the transport itself for every request; a captured value would be wrong (length) or redundant.
_TRANSPORT_HEADERS = frozenset({"host", "content-length", "transfer-encoding"})


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


async def capture(client: Any, create: Callable[[Any], Awaitable[Any]]) -> Template:
    """Run `create(sdk_client)` (the SDK's plain typed call: `with_raw_response` would add a header of its own)
    once against an in-memory transport and keep what the SDK would send."""
    seen: list[httpx2.Request] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, json={}, request=request)

    mock = httpx2.AsyncClient(transport=httpx2.MockTransport(answer))
    try:
        await create(client.with_options(http_client=mock))
    except Exception:
        if not seen:  # the SDK refused before sending: a real error, the caller's to report
            raise
        # else: the SDK could not read the empty stand-in reply; what it sent is all we wanted
    finally:
        await mock.aclose()
    request = seen[0]
    headers = {k: v for k, v in request.headers.items() if k.lower() not in _TRANSPORT_HEADERS}
    order = tuple(json.loads(request.content)) if request.content else ()
    return Template(str(request.url), headers, order)


@dataclass(frozen=True)
class Reply:
    """An HTTP reply: status, headers (names looked up in any case), and the body, unread as JSON."""

    status: int
    headers: Mapping[str, str]
    content: bytes

    def json(self) -> Any:
        """The body as JSON; ValueError (the backends' MalformedReply) when it is not JSON or not UTF-8."""
        return json.loads(self.content)


class Route:
    """One base URL: its SDK client (for errors), the captured template, our connections to it (or, through a
    proxy, an aiohttp session)."""

    def __init__(self, client: Any, timeout: float | None = None) -> None:
        self.client = client
        self.timeout = timeout  # seconds per request, as the SDK client had it (dispatch also bounds each attempt)
        self.template: Template | None = None
        self._capturing: asyncio.Future[Template] | None = None
        self._session: aiohttp.ClientSession | None = None
        self._target = yarl.URL()
        self._origin: Origin | None = None

    async def prepare(self, create: Callable[[Any], Awaitable[Any]]) -> Template:
        """The template, captured by the first caller while the others wait for it."""
        if self.template is not None:
            return self.template
        if self._capturing is None:
            self._capturing = asyncio.get_running_loop().create_future()
            try:
                self.template = await capture(self.client, create)
            except BaseException as e:
                self._capturing.set_exception(e)
                self._capturing.exception()  # retrieved here: a failed capture is raised to every waiter
                self._capturing = None
                raise
            self._capturing.set_result(self.template)
            return self.template
        return await asyncio.shield(self._capturing)

    def session(self, template: Template) -> aiohttp.ClientSession:
        """The aiohttp session that sends through a proxy (made inside the event loop that uses it)."""
        if self._session is None:
            # No connection limit here: dispatch's limiter decides how many are in flight. The template's headers
            # are the session's own, so no request merges them again; no cookies (an API sets none we need).
            # trust_env: the proxy settings the SDK itself (httpx) honours. The body is read whole.
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, ttl_dns_cache=300),
                timeout=aiohttp.ClientTimeout(total=self.timeout),
                headers=dict(template.headers),
                skip_auto_headers=("User-Agent",),
                cookie_jar=aiohttp.DummyCookieJar(),
                trust_env=True,
            )
            self._target = yarl.URL(template.url, encoded=True)  # parsed once, not per request
        return self._session

    def origin(self, template: Template) -> Origin | None:
        """Our own connections to the template's origin, or None when a proxy is configured for it (the
        HTTP(S)_PROXY / ALL_PROXY / NO_PROXY environment, as httpx reads it): aiohttp sends those."""
        if self._origin is None and self._session is None:
            url = urllib.parse.urlsplit(template.url)
            proxied = url.scheme in urllib.request.getproxies() and not urllib.request.proxy_bypass(url.hostname or "")
            if proxied:
                return None
            self._origin = Origin(template.url, template.headers, self.timeout)
        return self._origin

    async def post(self, template: Template, body: Mapping[str, Any]) -> Reply:
        """One POST of `body`; a connection that fails or drops is a RetryableError."""
        data = template.encode(body)
        origin = self.origin(template)
        if origin is not None:
            try:
                return Reply(*await origin.post(data))
            except ConnectionDropped as e:
                raise RetryableError(f"connection error: {e}") from None
            except TimeoutError:
                raise RetryableError("request timed out") from None
            except OSError as e:  # refused, reset, unreachable, TLS (ssl.SSLError is an OSError)
                raise RetryableError(f"connection error: {type(e).__name__}: {e}") from None
        try:
            async with self.session(template).post(self._target, data=data) as r:
                return Reply(r.status, r.headers, await r.read())
        except aiohttp.ConnectionTimeoutError as e:
            raise RetryableError(f"connection error: {e}") from None
        except TimeoutError:
            raise RetryableError("request timed out") from None
        except aiohttp.ClientPayloadError as e:
            raise RetryableError(f"connection error: the reply was cut off ({e})") from None
        except (aiohttp.ClientError, OSError) as e:
            raise RetryableError(f"connection error: {type(e).__name__}: {e}") from None

    async def call(
        self, body: Mapping[str, Any], create: Callable[[Any], Awaitable[Any]]
    ) -> tuple[Any, RateLimit | None]:
        """Post `body` (capturing the template with `create` the first time): the reply's JSON and what its
        rate-limit headers said. An error reply is raised as the SDK's own exception (`status_error`)."""
        template = self.template or await self.prepare(create)
        reply = await self.post(template, body)
        if reply.status >= 300:
            raise self.status_error(reply, template)
        return reply.json(), rate_limit(reply.headers)

    def status_error(self, reply: Reply, template: Template) -> Exception:
        """The SDK's own exception for an error reply (RateLimitError, BadRequestError, ...)."""
        request = httpx2.Request("POST", template.url)
        response = httpx2.Response(reply.status, headers=dict(reply.headers), content=reply.content, request=request)
        error: Exception = self.client._make_status_error_from_response(response)
        return error

    async def aclose(self) -> None:
        if self._origin is not None:
            self._origin.close()
            self._origin = None
        if self._session is not None:
            await self._session.close()
            self._session = None
        await self.client.close()
