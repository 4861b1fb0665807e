"""A local stand-in for the OpenAI and Anthropic HTTP APIs (127.0.0.1 only), with injectable latency and faults.

Speaks `POST /v1/chat/completions`, `POST /v1/completions` (raw prompts), `POST /v1/embeddings` and
`GET /v1/models` (OpenAI wire format; the model list only when `models` is given, else 404, as servers
without one answer) and `POST /v1/messages` (Anthropic wire format), so the real SDKs can be pointed at it
with `base_url`. Every request is logged in `calls`; every reply delivered with status 200 and a model
answer is logged in `answered`.

Faults come from `plan(prompt, attempt) -> action`, where `attempt` counts the requests seen so far for
that prompt (0 for the first). Actions: "ok", "429" (with retry-after and retry-after-ms), "500", "529",
"hang" (never answers), "slow" (answers after SLOW_SECONDS), "malformed" (200 with a broken JSON body),
"utf8" (200, a body that is not UTF-8), "null" (200, content null and no refusal), "empty" (200, empty
text), "refusal" (200, the provider's refusal: OpenAI's `refusal` field with content null, Anthropic's
stop_reason "refusal"), "length" (200, finish_reason length), "huge" (200, a 2 MB reply), "leak" (200, a
reply quoting the caller's key), "401", "400" (a 400 about this request), "400-context" (the prompt is over
the context length, in the provider's words), "400-param" (a 400 naming a parameter: the request's shape),
"400-quote" (a 400 quoting the prompt, as validation errors do), "404" (no such model), and 200 replies that hold
no answer (fake_replies.py GATEWAY_200): "200-error-502", "200-error-400", "200-error" (a gateway's error report,
with and without a status in error.code), "200-list", "200-no-choices".

Rate limits (`--rps-limit 200` & co., off by default; 429s logged as "limited") and GET /stats: tests/fake_ratelimit.py.

A local server's slots (`slots=S`, `--slots S`): S requests computed at once (each for `latency` seconds), the rest
queued in order of arrival (tests/fake_slots.py; aiohttp does not cancel a handler whose client left, so here an
abandoned request is computed to the end, queued or not); `props=` (`--props`): GET /props answers
`{"total_slots": props}` as llama.cpp's server does (`--props`: S); `metrics=True` (`--metrics`): GET /metrics
answers vLLM's gauges of its queue (`vllm:num_requests_running`: the busy slots, `vllm:num_requests_waiting`: the
queued), written by prometheus_client as vLLM writes them; `metrics=` a string: that text, as it is.

In tests: `with FakeServer(...) as server:` runs it on a background thread. For benchmarks, run it in
its own process: `python tests/fake_server.py --latency 0.1` prints `port N` and serves until killed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import ssl
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import prometheus_client
from aiohttp import web

if __name__ == "__main__":  # run as a script: import tests.* from this checkout
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests import fake_ratelimit as ratelimit
from tests.fake_replies import (
    HUGE_BYTES,
    REFUSAL,
    RETRY_AFTER_MS,
    SLOW_SECONDS,
    anthropic_reply,
    bag_of_words,
    chat_reply,
    default_answer,
    embeddings_reply,
    fault,
    models_list,
    raw_reply,
    reply_text,
)
from tests.fake_slots import Slots

__all__ = ["HUGE_BYTES", "REFUSAL", "RETRY_AFTER_MS", "FakeServer", "bag_of_words", "default_answer"]

Plan = Callable[[str, int], str]
CHAT, RAW, MESSAGES, EMBEDDINGS = "/v1/chat/completions", "/v1/completions", "/v1/messages", "/v1/embeddings"


def always_ok(prompt: str, attempt: int) -> str:
    return "ok"


def fail_first(n: int, action: str) -> Plan:
    """Every prompt's first n attempts get `action`, later ones succeed."""
    return lambda prompt, attempt: action if attempt < n else "ok"


@dataclass
class Call:
    path: str
    prompt: str
    attempt: int
    action: str
    body: dict[str, Any]
    headers: dict[str, str] = field(repr=False)
    raw: bytes = field(default=b"", repr=False)  # the body's bytes as they arrived
    query: dict[str, str] = field(default_factory=dict, repr=False)  # the URL's query, decoded (`?api-key=`)


class FakeServer:
    """An aiohttp app on 127.0.0.1 with a random free port."""

    max_body = 1024**2  # aiohttp's default request size limit (a batch upload needs more)
    ssl_context: ssl.SSLContext | None = None  # set: serve https (tests/calling/test_transport.py)

    def __init__(
        self,
        latency: float = 0.0,
        plan: Plan = always_ok,
        answer: Callable[[str], str] = default_answer,
        api_key: str | None = None,
        hang_seconds: float = 30.0,
        log: bool = True,
        models: list[str] | None = None,
        served_model: str | None = None,
        usage: Callable[[str, str], tuple[int, int]] | None = None,
        rate_limit: ratelimit.RateLimitPolicy | None = None,
        extras: Callable[[str, dict[str, Any], dict[str, Any]], dict[str, Any]] | None = None,
        slots: int | None = None,
        props: object = None,
        model_path: str | None = None,
        metrics: bool | str = False,
    ) -> None:
        self.latency = latency
        self.slots = Slots(slots, latency) if slots is not None else None  # S at once, the rest queued
        self.props = props  # what GET /props says total_slots is (any JSON value); None: 404
        self.model_path = model_path  # the model file GET /props names, as llama.cpp's server does (and answers then)
        self.metrics = metrics  # GET /metrics: vLLM's queue gauges (True), that text (a string), or 404 (False)
        self.metrics_asked = 0
        self.plan = plan
        self.answer = answer
        self.api_key = api_key  # when set, any other key gets a 401 that echoes it (as providers do)
        self.hang_seconds = hang_seconds
        self.log = log  # benchmarks turn logging off
        self.models = models  # what GET /v1/models lists; None: 404 (a server without the list)
        self.served_model = served_model  # the `model` of every reply; None: the model asked for
        # (prompt, text) -> (input, output tokens) reported; default: their word counts
        self.usage = usage or (lambda prompt, text: (len(prompt.split()), len(text.split())))
        self.calls: list[Call] = []
        self.answered: list[str] = []  # prompts answered with status 200 and a model answer
        self.attempts: dict[str, int] = {}
        self.in_flight = 0
        self.max_in_flight = 0  # the most requests the server held at once
        self.served = 0  # replies with status 200 and a model answer (counted even when not logging)
        self.limiter = ratelimit.RateLimiter(rate_limit) if rate_limit is not None else None
        # (endpoint, request body, reply) -> the reply sent: logprobs, tool calls, embeddings (tests/fake_protocols.py)
        self.extras = extras
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._stop: asyncio.Event | None = None

    @property
    def openai_url(self) -> str:
        return f"{'https' if self.ssl_context else 'http'}://127.0.0.1:{self.port}/v1"

    @property
    def anthropic_url(self) -> str:
        return self.openai_url.removesuffix("/v1")

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._track], client_max_size=self.max_body)
        app.router.add_post("/v1/chat/completions", self._openai)
        app.router.add_post("/v1/completions", self._raw)
        app.router.add_post("/v1/messages", self._anthropic)
        app.router.add_post("/v1/embeddings", self._embeddings)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/stats", self._stats)
        app.router.add_get("/props", self._props)
        app.router.add_get("/metrics", self._metrics)
        return app

    async def serve(self, port: int = 0) -> None:  # start listening (inside a running loop)
        self._stop = asyncio.Event()
        self._runner = web.AppRunner(self.app(), access_log=None, shutdown_timeout=0.1)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", port, ssl_context=self.ssl_context)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def shutdown(self) -> None:
        if self._stop is not None:
            self._stop.set()
        if self._runner is not None:
            await self._runner.cleanup()

    def __enter__(self) -> FakeServer:
        ready = threading.Event()

        def main() -> None:
            self._loop = asyncio.new_event_loop()
            self._loop.run_until_complete(self.serve(self.port))  # port 0 (unless set before): a free one
            ready.set()
            self._loop.run_forever()
            self._loop.run_until_complete(self.shutdown())
            self._loop.close()

        self._thread = threading.Thread(target=main, daemon=True)
        self._thread.start()
        ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._loop is not None and self._thread is not None
        self._loop.call_soon_threadsafe(self._stop.set)  # type: ignore[union-attr]
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def received(self) -> list[str]:  # prompts of every request received, in order
        return [c.prompt for c in self.calls]

    # --- request handling --------------------------------------------------------------------------

    @web.middleware
    async def _track(self, request: web.Request, handler: Callable[..., Any]) -> web.StreamResponse:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            response = await handler(request)
            response.headers.update(request.get(ratelimit.HEADERS, ()))  # the rate limit's headers, if any
            return response
        finally:
            self.in_flight -= 1

    async def _begin(self, request: web.Request, prompt_of: Callable[[dict[str, Any]], str]) -> tuple[str, str, dict]:
        raw = await request.read()
        body = json.loads(raw)
        prompt = prompt_of(body)
        attempt = self.attempts.get(prompt, 0)
        self.attempts[prompt] = attempt + 1
        key = request.headers.get("x-api-key") or request.headers.get("authorization", "").removeprefix("Bearer ")
        action = "401" if self.api_key is not None and key != self.api_key else self.plan(prompt, attempt)
        if self.limiter is not None and action != "401":  # "limited": beyond the limit, a 429 (or 400) at once
            action = self.limiter.admit(request, prompt, action)
        if self.log:
            self.calls.append(
                Call(request.path, prompt, attempt, action, body, dict(request.headers), raw, dict(request.query))
            )
        if action == "limited":
            raise request[ratelimit.REFUSAL]
        if action == "hang":
            assert self._stop is not None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), self.hang_seconds)
        elif action == "slow":  # answers normally, after SLOW_SECONDS
            await asyncio.sleep(SLOW_SECONDS)
            action = "ok"
        elif self.slots is not None:
            await self.slots.serve()  # a slot, then `latency` seconds in it
        elif self.latency:
            await asyncio.sleep(self.latency)
        return prompt, action, body | {"_key": key}

    async def _answer(
        self, request: web.Request, prompt_of: Callable[[dict[str, Any]], str], endpoint: str
    ) -> web.Response:
        prompt, action, body = await self._begin(request, prompt_of)
        error = fault(action, body["_key"], anthropic=endpoint == MESSAGES, prompt=prompt)
        if error is not None:
            return error
        return self._reply(prompt, self.reply_body(endpoint, prompt, action, body["model"], body["_key"], body))

    async def _openai(self, request: web.Request) -> web.Response:
        return await self._answer(request, lambda b: b["messages"][-1]["content"], CHAT)

    async def _raw(self, request: web.Request) -> web.Response:
        return await self._answer(request, lambda b: b["prompt"], RAW)

    async def _anthropic(self, request: web.Request) -> web.Response:
        return await self._answer(request, _anthropic_prompt, MESSAGES)

    async def _models(self, request: web.Request) -> web.Response:
        if self.models is None:
            return web.json_response({"error": {"message": "Not Found", "type": "not_found"}}, status=404)
        return web.json_response(models_list(self.models))

    def reply_body(
        self, endpoint: str, prompt: str, action: str, model: str, key: str = "", request: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """The 200 reply `endpoint` gives for an answering action (also what tests/fake_batch_server.py puts in
        its result files, so batch and one-by-one replies are alike); `extras` may add to it what `request` asks."""
        text = reply_text(action, self.answer(prompt), key)
        if endpoint == MESSAGES and action == "refusal":
            text = REFUSAL  # Anthropic refuses in words, with stop_reason "refusal"
        build = {CHAT: chat_reply, RAW: raw_reply, MESSAGES: anthropic_reply}[endpoint]
        reply = build(self.served_model or model, text, action, self.usage(prompt, text or ""))
        return self.extras(endpoint, request or {}, reply) if self.extras is not None else reply

    async def _embeddings(self, request: web.Request) -> web.Response:
        prompt, action, body = await self._begin(request, _embedding_input)
        error = fault(action, body["_key"], anthropic=False)
        if error is not None:
            return error
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        reply = embeddings_reply(body["model"], texts)
        return self._reply(prompt, self.extras(EMBEDDINGS, body, reply) if self.extras is not None else reply)

    async def _stats(self, request: web.Request) -> web.Response:
        limits = self.limiter and self.limiter.stats()
        slots = self.slots and {
            "wasted": self.slots.wasted,
            "dropped": self.slots.dropped,
            "max_waiting": self.slots.max_waiting,
        }
        stats = {"served": self.served, "max_in_flight": self.max_in_flight, "rate_limit": limits, "slots": slots}
        return web.json_response(stats)

    async def _props(self, request: web.Request) -> web.Response:
        if self.props is None and self.model_path is None:
            return web.json_response({"error": {"message": "File Not Found", "type": "not_found_error"}}, status=404)
        said: dict[str, Any] = {"total_slots": self.props, "model_alias": "fake"}
        if self.model_path is not None:  # llama.cpp's entries about the model (its /props has more: served.py)
            said |= {"model_path": self.model_path, "chat_template": "{{ messages[0].content }}", "build_info": "fake"}
            said["default_generation_settings"] = {"n_ctx": 4096, "params": {"top_k": 40, "repeat_penalty": 1.0}}
        return web.json_response(said)

    async def _metrics(self, request: web.Request) -> web.Response:
        self.metrics_asked += 1
        if isinstance(self.metrics, str):
            return web.Response(text=self.metrics, content_type="text/plain")
        if not self.metrics:
            return web.Response(text="404: Not Found", status=404)
        registry = prometheus_client.CollectorRegistry()
        said = {"vllm:num_requests_running": self.slots.busy if self.slots else self.in_flight}
        said["vllm:num_requests_waiting"] = self.slots.waiting if self.slots else 0
        for name, value in said.items():  # labelled as vLLM labels them: by model and engine
            gauge = prometheus_client.Gauge(name, name, ["model_name", "engine"], registry=registry)
            gauge.labels("fake", "0").set(value)
        return web.Response(body=prometheus_client.generate_latest(registry), content_type="text/plain")

    def _reply(self, prompt: str, reply: dict[str, Any]) -> web.Response:
        self.served += 1
        if self.log:
            self.answered.append(prompt)
        return web.Response(text=json.dumps(reply), content_type="application/json")


def _embedding_input(body: dict[str, Any]) -> str:
    value = body["input"]
    return value if isinstance(value, str) else "\n".join(value)


def _anthropic_prompt(body: dict[str, Any]) -> str:
    content = body["messages"][-1]["content"]
    return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)


def main() -> None:
    p = argparse.ArgumentParser(description="Serve the fake OpenAI/Anthropic API on 127.0.0.1 until killed.")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--latency", type=float, default=0.1)
    p.add_argument("--slots", type=int, default=None, help="requests computed at once (the rest queue)")
    p.add_argument("--props", action="store_true", help="GET /props states the slots (as llama.cpp's server)")
    p.add_argument("--metrics", action="store_true", help="GET /metrics states the queue (as vLLM's server)")
    ratelimit.add_arguments(p)
    a = p.parse_args()

    async def run() -> None:
        policy = ratelimit.policy_from_args(a)
        server = FakeServer(
            latency=a.latency,
            log=False,
            rate_limit=policy,
            slots=a.slots,
            props=a.slots if a.props else None,
            metrics=a.metrics,
        )
        await server.serve(a.port)
        print(f"port {server.port}", flush=True)
        await asyncio.Event().wait()

    ratelimit.event_loop_runner()(run())  # uvloop when installed: no per-request logging, little CPU


if __name__ == "__main__":
    main()
