"""The API backends' lean request path: the SDK decides what is sent, aiohttp sends it.

Why: the SDKs' typed `create()` spends 2-3 ms of CPU per request on its typed request transform and on
building pydantic response objects, which caps a run at a few hundred requests a second on two cores, far
below what `vllm serve` with data parallelism answers (issue 12). So the SDK keeps what it is good at and
does it once per base URL: `capture` runs the SDK's own `create()` against an in-memory transport and keeps
the URL, every header (auth, API version, user agent, the SDK's platform headers) and the body's key order
it produced. Each request then posts `json.dumps(body)` with the SDK's own encoding settings, in that key
order, with those headers, through the base URL's aiohttp session (harness/calling/backends/transport.py:
certificates, proxies, connections): the server receives the bytes the SDK would have sent
(tests/calling/test_http.py compares them). An error reply is an `ErrorReply`, classified by our own policy
from its status and its JSON `error` fields (http_errors.py `reply_error`); a reply is read with `json.loads`
into the few fields a Completion needs (each backend's `completion_from`).
"""

from __future__ import annotations

import asyncio
import json
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp
import httpx2  # the SDKs' own HTTP library (openai>=3, anthropic>=1: pyproject.toml)
import yarl
from multidict import CIMultiDict

from harness.calling.backends.base import (
    PermanentError,
    RetryableError,
)
from harness.calling.backends.bounded import ReplyTooLarge
from harness.calling.backends.http_errors import ErrorReply
from harness.calling.backends.transport import MAX_REPLY_MB, Link, SDKTransport, proxy_for
from harness.calling.limits import rate_limit
from harness.calling.redaction import secrets_of, url_secrets
from harness.config.checks import url_query
from harness.types import RateLimit

# Set by the sending library for every request: a captured value would be wrong (length), redundant, or (encoding)
# offer what aiohttp cannot decode; aiohttp offers the encodings it reads.
_TRANSPORT_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "accept-encoding", "connection"})
LISTING_TIMEOUT = 10.0  # seconds for GET /models, asked only to explain a 404
PROPS_TIMEOUT = 5.0  # seconds for GET /props (a server's slots), asked once before a run against --base-url
MAX_SLOTS = 65_536  # a larger `total_slots` is no number a server computes at once: not read


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


@dataclass(frozen=True)
class Received:
    """A 200 reply as it came: its body (decoded; only its first bytes when it was over the cap, `over` saying
    so) and what its rate-limit headers said."""

    content: bytes
    limits: RateLimit | None
    over: str | None = None


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

    async def slots(self) -> int | None:
        """How many requests the server computes at once, where it says: llama.cpp's server answers GET /props (at
        its root, beside /v1) with `total_slots`, its --parallel. None for any other reply, or none in PROPS_TIMEOUT:
        a server that does not say is watched instead (harness/calling/congestion.py)."""
        url = yarl.URL(self.link.base_url)
        root = url.with_path(url.path.rstrip("/").removesuffix("/v1").rstrip("/") + "/props").with_query(url.query)
        headers = {k: v for k, v in self._headers.items() if k.lower() != "content-type"}
        try:
            status, _, content = await self.link.request(
                "GET", root, headers, None, aiohttp.ClientTimeout(total=PROPS_TIMEOUT)
            )
            slots = json.loads(content).get("total_slots") if status == 200 else None
        except (RetryableError, PermanentError, ReplyTooLarge, ValueError, AttributeError, TypeError, RecursionError):
            return None
        return slots if type(slots) is int and 1 <= slots <= MAX_SLOTS else None

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
    proxy may echo back (the password, `user:password`, the Proxy-Authorization token transport.py sends), and the
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
