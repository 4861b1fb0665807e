"""One base for the API providers reached over HTTP (issue 33): a provider is its request and reply mapping.

`HTTPBackend` holds what OpenAI-style and Anthropic-style calling share: the configuration sections a backend
takes (settings.py `ApiOptions`, and `Decoding`, the run's decoding fields), one Route per base URL (the SDK
client that makes the request template, and the aiohttp session every request goes through: transport.py, the
wire), the least busy route per attempt, the key and the proxy's credentials to redact, errors mapped onto the
retry policy (reading.py `sdk_errors`), a 200 reply read without ever losing it (reading.py) and turned
into a Completion with the key redacted (`answer`). A provider says how a request becomes a body (`body`), how a
reply becomes an answer (`completion_from`), and either which SDK call makes its requests (`sdk`, `client`,
`sdk_call`) or, without an SDK, its `endpoint` and `headers` (a plain JSON POST). Its batch endpoint, if any, is
harness/calling/batch/base.py `BatchProvider`; its line in harness/calling/backends BACKENDS names both.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Self

import httpx2

from harness.calling.backends.base import Decoding, RemoteBackend, api_key, clean_reply, env_base_url
from harness.calling.backends.description import Description, decoding
from harness.calling.backends.reading import ErrorReply, read_reply, reply_error, sdk_errors
from harness.calling.backends.thinking import NEVER, Rule, Thinking
from harness.calling.backends.transport import ClientPool, Route, open_routes, plain_routes, route_secrets
from harness.calling.redaction import redact_completion
from harness.config.settings import ApiOptions, RunConfig
from harness.types import Completion, RateLimit, Request, ServerQueue, Usage

_DECODING = frozenset(f.name for f in dataclasses.fields(Decoding))


def sections(
    api: ApiOptions | None, decoding: Decoding | None, base_urls: Sequence[str], changes: dict[str, Any]
) -> tuple[ApiOptions, Decoding]:
    """The two sections with `changes` (field names of either) applied: the keyword form tests and scripts use."""
    api, decoding = api or ApiOptions(), decoding or Decoding()
    if "stop" in changes:
        changes = changes | {"stop": tuple(changes["stop"])}
    api = dataclasses.replace(api, **{k: v for k, v in changes.items() if k not in _DECODING})
    if base_urls:
        api = dataclasses.replace(api, base_urls=tuple(base_urls))
    return api, dataclasses.replace(decoding, **{k: v for k, v in changes.items() if k in _DECODING})


class HTTPBackend(RemoteBackend):
    """A provider over HTTP; subclasses give `body`, `completion_from`, `describe` and the SDK or the endpoint."""

    sdk: Any = None  # the SDK module (openai, anthropic) whose exceptions its typed calls raise; None: no SDK
    default_url = ""  # without --base-url and without an SDK (which has its own default)
    thinking: Thinking = NEVER  # a reasoning run's settings (thinking.py), set in `setup`
    # Its reasoning rule (thinking.py), the one its line of BACKENDS states for those that do not build it: --dry-run,
    # --max-cost (tests/calling/test_backend_kinds.py checks that the two agree); None: it never thinks
    thinking_rule: Rule | None = None

    def __init__(
        self,
        model: str,
        api_key: str,
        base_urls: Sequence[str] = (),
        *,
        api: ApiOptions | None = None,
        decoding: Decoding | None = None,
        env_url: str | None = None,
        url_env: str | None = None,
        **changes: Any,
    ) -> None:
        """`env_url`: without --base-url, the base URL of the SDK's own variable (`url_env`: OPENAI_BASE_URL), read
        and checked by `from_config` (base.py env_base_url) so that its query goes apart as --base-url's does; None:
        the SDK's default."""
        self.api, self.decoding = sections(api, decoding, base_urls, changes)
        self.model = model
        self.chat = self.decoding.chat is not False
        self.stop = list(self.decoding.stop)
        self.max_tokens = self.decoding.max_tokens
        self.setup()  # refusals come before any client or session is made
        if self.sdk is None:
            urls = list(self.api.base_urls) or [env_url or self.default_url]
            headers = self.headers(api_key)
            self.routes = plain_routes(urls, self.api.timeout, self.endpoint, headers, self.api.max_reply_mb)
        else:
            self.routes = open_routes(
                list(self.api.base_urls) or [env_url],  # None: the SDK's default
                self.api.timeout,
                lambda url, http: self.client(api_key, url, http),
                self.api.max_reply_mb,
            )
        if not self.api.base_urls and env_url and url_env:  # an error that asks whether the URL is right names the
            for route in self.routes:  # variable that gave it, not the flag the user never gave (transport.py Link)
                route.link.named_by = f"${url_env}"
        self.clients = [r.client for r in self.routes]
        self.base_urls = [r.link.base_url for r in self.routes]
        self.pool = ClientPool(self.routes)
        self.secrets = route_secrets(api_key, self.routes)  # never stored or printed (calling/redaction.py)

    @classmethod
    def from_config(cls, config: RunConfig, line: Description) -> Self:
        """The run's model at the provider or at --base-url (or its line's url_env): its key (its line's key_env),
        its two sections."""
        assert line.key_env is not None, f"backend {cls.name} has no key_env in BACKENDS"
        assert line.thinking == cls.thinking_rule, f"{cls.name}: its line's thinking is not its thinking_rule"
        key = api_key(line.key_env, cls.name, config.api.base_urls)
        url = None if config.api.base_urls else env_base_url(line.url_env)
        return cls(config.model, key, api=config.api, decoding=decoding(config), env_url=url, url_env=line.url_env)

    def setup(self) -> None:
        """The provider's own settings from `api` and `decoding`, and its refusals (e.g. --no-chat)."""

    def client(self, api_key: str, url: str | None, http: httpx2.AsyncClient) -> Any:
        """The SDK client for one base URL on `http` (whose transport is the route's session), SDK retries off."""
        raise NotImplementedError

    def sdk_call(self, body: dict[str, Any]) -> Callable[[Any], Awaitable[Any]] | None:
        """The SDK's own typed call for this body, run once per base URL to capture the request template."""
        return None

    def headers(self, api_key: str) -> dict[str, str]:
        """Without an SDK: the headers of every request."""
        return {"Authorization": f"Bearer {api_key}"}

    def errors(self, body: dict[str, Any] | None = None) -> AbstractContextManager[None]:
        """A context that maps error replies and the SDK's exceptions onto the retry policy, key redacted."""
        return sdk_errors(self.sdk, self.secrets, body)

    async def send(self, request: Request) -> Completion:
        body = self.body(request)
        with self.pool.lease() as route, self.errors(body):
            try:
                reply = await route.call(body, lambda: self.sdk_call(body))
            except ErrorReply as e:
                raise await self.refused(route, e, body) from None
        return read_reply(request.id, reply, self.secrets, lambda d: self.completion_from(request.id, d, reply.limits))

    async def capacity(self) -> int | None:
        """The slots every --base-url server states (summed: dispatch spreads requests over them), asked only of
        servers named with --base-url (a provider's own API states none); None unless each of them states it."""
        if not self.api.base_urls:
            return None
        slots = [await route.slots() for route in self.routes]
        return None if None in slots else sum(s for s in slots if s is not None)

    async def queue(self) -> ServerQueue | None:
        """The queue every --base-url server states (summed, as the slots are), asked of those servers only; None
        unless each of them states it."""
        if not self.api.base_urls:
            return None
        said = [await route.queue() for route in self.routes]
        if None in said:
            return None
        return ServerQueue(sum(q.running for q in said if q), sum(q.waiting for q in said if q))

    async def served(self) -> list[dict[str, Any]] | None:
        """What every --base-url server says it serves (served.py), in the cache key in place of their addresses;
        None unless each of them says it (a provider's own API is named by its address, as before)."""
        if not self.api.base_urls:
            return None
        said = [await route.served() for route in self.routes]
        known = {json.dumps(s, sort_keys=True): s for s in said if s is not None}  # one per distinct server
        return [known[k] for k in sorted(known)] if known and None not in said else None

    async def refused(self, route: Route, e: ErrorReply, body: dict[str, Any]) -> Exception:
        """An error reply as our error (a provider may explain some better, e.g. a 404)."""
        return reply_error(e, self.secrets, body)

    def completion_from(self, request_id: str, data: Any, limits: RateLimit | None = None) -> Completion:
        """A reply's JSON as a Completion, whether it came one by one or in a batch's results."""
        raise NotImplementedError

    def answer(
        self,
        request_id: str,
        text: str,
        usage: Usage,
        finish: str | None,
        served: object = None,
        limits: RateLimit | None = None,
        refusal: str | None = None,
        thought: str | None = None,
        probs: Mapping[str, float] | None = None,
    ) -> Completion:
        """The Completion of a read reply: text, refusal and thought capped and the secrets redacted from every
        field (base.py `clean_reply`, redaction.py)."""
        text, truncated = clean_reply(text, self.secrets)
        completion = Completion(
            request_id,
            text,
            usage=usage,
            finish_reason=finish,
            refusal=clean_reply(refusal, self.secrets)[0] if refusal is not None else None,
            served_model=served if isinstance(served, str) else None,
            truncated=truncated,
            rate_limit=limits,
            reasoning=clean_reply(thought, self.secrets)[0] if thought is not None else None,
            score_probs=probs,
        )
        return redact_completion(completion, self.secrets)  # the key out of `model` and `finish_reason` too

    def output_budget(self, request: Request) -> int:
        return self.thinking.max_tokens(request.max_tokens)

    async def aclose(self) -> None:
        for route in self.routes:
            await route.aclose()
