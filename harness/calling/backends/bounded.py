"""Limits on what a server can make the transport (transport.py `Link`) do, issue 30.

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

from collections.abc import Mapping

import aiohttp
import yarl

from harness.calling.backends.base import PermanentError

MAX_REDIRECTS = 5  # 307/308 hops on the same host before the last reply is taken as it is
CHUNK = 65536


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
