"""A local stand-in for the OpenAI and Anthropic HTTP APIs (127.0.0.1 only), with injectable latency and faults.

Speaks `POST /v1/chat/completions` and `POST /v1/embeddings` (OpenAI wire format) and `POST /v1/messages`
(Anthropic wire format),
so the real SDKs can be pointed at it with `base_url`. Every request is logged in `calls`; every reply
delivered with status 200 and a model answer is logged in `answered`.

Faults come from `plan(prompt, attempt) -> action`, where `attempt` counts the requests seen so far for
that prompt (0 for the first). Actions: "ok", "429" (with retry-after and retry-after-ms), "500", "529",
"hang" (never answers), "malformed" (200 with a broken JSON body), "empty" (200, empty text), "refusal"
(200, refusal text), "401", "400".

In tests: `with FakeServer(...) as server:` runs it on a background thread. For benchmarks, run it in
its own process: `python tests/fake_server.py --latency 0.1` prints `port N` and serves until killed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

Plan = Callable[[str, int], str]
REFUSAL = "I'm sorry, but I can't help with that request."
RETRY_AFTER_MS = 20


def default_answer(prompt: str) -> str:
    """A deterministic score in [1.0, 5.0] from the prompt, phrased as a model might."""
    h = int(hashlib.sha256(prompt.encode()).hexdigest(), 16)
    return f"{1 + (h % 41) / 10:.1f}"


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


class FakeServer:
    """An aiohttp app on 127.0.0.1 with a random free port."""

    max_body = 1024**2  # aiohttp's default request size limit (a batch upload needs more)

    def __init__(
        self,
        latency: float = 0.0,
        plan: Plan = always_ok,
        answer: Callable[[str], str] = default_answer,
        api_key: str | None = None,
        hang_seconds: float = 30.0,
        log: bool = True,
    ) -> None:
        self.latency = latency
        self.plan = plan
        self.answer = answer
        self.api_key = api_key  # when set, any other key gets a 401 that echoes it (as providers do)
        self.hang_seconds = hang_seconds
        self.log = log  # benchmarks turn logging off
        self.calls: list[Call] = []
        self.answered: list[str] = []  # prompts answered with status 200 and a model answer
        self.attempts: dict[str, int] = {}
        self.in_flight = 0
        self.max_in_flight = 0  # the most requests the server held at once
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._stop: asyncio.Event | None = None

    @property
    def openai_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def anthropic_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._track], client_max_size=self.max_body)
        app.router.add_post("/v1/chat/completions", self._openai)
        app.router.add_post("/v1/messages", self._anthropic)
        app.router.add_post("/v1/embeddings", self._embeddings)
        return app

    async def serve(self, port: int = 0) -> None:
        """Start listening (inside a running loop)."""
        self._stop = asyncio.Event()
        self._runner = web.AppRunner(self.app(), access_log=None, shutdown_timeout=0.1)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", port)
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
            self._loop.run_until_complete(self.serve())
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

    def received(self) -> list[str]:
        """Prompts of every request received, in order."""
        return [c.prompt for c in self.calls]

    # --- request handling --------------------------------------------------------------------------

    @web.middleware
    async def _track(self, request: web.Request, handler: Callable[..., Any]) -> web.StreamResponse:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await handler(request)
        finally:
            self.in_flight -= 1

    async def _begin(self, request: web.Request, prompt_of: Callable[[dict[str, Any]], str]) -> tuple[str, str, dict]:
        body = await request.json()
        prompt = prompt_of(body)
        attempt = self.attempts.get(prompt, 0)
        self.attempts[prompt] = attempt + 1
        key = request.headers.get("x-api-key") or request.headers.get("authorization", "").removeprefix("Bearer ")
        action = "401" if self.api_key is not None and key != self.api_key else self.plan(prompt, attempt)
        if self.log:
            self.calls.append(Call(request.path, prompt, attempt, action, body, dict(request.headers)))
        if action == "hang":
            assert self._stop is not None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), self.hang_seconds)
        elif self.latency:
            await asyncio.sleep(self.latency)
        return prompt, action, body | {"_key": key}

    def _fault(self, action: str, key: str, anthropic: bool) -> web.Response | None:
        kinds = {
            "429": (429, "rate_limit_error", "Rate limit reached; slow down."),
            "500": (500, "api_error", "Internal server error."),
            "529": (529, "overloaded_error", "Overloaded."),
            "400": (400, "invalid_request_error", "This request is not valid for this model."),
            "401": (401, "authentication_error", f"Incorrect API key provided: {key}."),
        }
        if action == "malformed":
            return web.Response(status=200, text='{"id": "x", "choices": [', content_type="application/json")
        if action not in kinds:
            return None
        status, kind, message = kinds[action]
        headers = {"retry-after": "1", "retry-after-ms": str(RETRY_AFTER_MS)} if status == 429 else {}
        error = {"type": kind, "message": message}
        body = {"type": "error", "error": error} if anthropic else {"error": error | {"code": None, "param": None}}
        return web.json_response(body, status=status, headers=headers)

    def _text(self, prompt: str, action: str) -> str:
        if action == "empty":
            return ""
        return REFUSAL if action == "refusal" else self.answer(prompt)

    async def _openai(self, request: web.Request) -> web.Response:
        prompt, action, body = await self._begin(request, lambda b: b["messages"][-1]["content"])
        fault = self._fault(action, body["_key"], anthropic=False)
        if fault is not None:
            return fault
        return self._reply(prompt, self.openai_reply(prompt, action, body["model"]))

    def openai_reply(self, prompt: str, action: str, model: str) -> dict[str, Any]:
        """A Chat Completions reply body (also what tests/fake_batch_server.py puts in its output files)."""
        text = self._text(prompt, action)
        usage = {"prompt_tokens": len(prompt.split()), "completion_tokens": len(text.split())}
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": usage | {"total_tokens": usage["prompt_tokens"] + usage["completion_tokens"]},
        }

    async def _anthropic(self, request: web.Request) -> web.Response:
        prompt, action, body = await self._begin(request, _anthropic_prompt)
        fault = self._fault(action, body["_key"], anthropic=True)
        if fault is not None:
            return fault
        return self._reply(prompt, self.anthropic_reply(prompt, action, body["model"]))

    def anthropic_reply(self, prompt: str, action: str, model: str) -> dict[str, Any]:
        """A Messages reply body (also what tests/fake_batch_server.py puts in its results)."""
        text = self._text(prompt, action)
        return {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": text}] if text else [],
            "stop_reason": "refusal" if action == "refusal" else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": len(prompt.split()), "output_tokens": len(text.split())},
        }

    async def _embeddings(self, request: web.Request) -> web.Response:
        prompt, action, body = await self._begin(request, _embedding_input)
        fault = self._fault(action, body["_key"], anthropic=False)
        if fault is not None:
            return fault
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = [{"object": "embedding", "index": i, "embedding": bag_of_words(t)} for i, t in enumerate(texts)]
        tokens = sum(len(t.split()) for t in texts)
        reply = {
            "object": "list",
            "data": data,
            "model": body["model"],
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }
        return self._reply(prompt, reply)

    def _reply(self, prompt: str, reply: dict[str, Any]) -> web.Response:
        if self.log:
            self.answered.append(prompt)
        return web.Response(text=json.dumps(reply), content_type="application/json")


def bag_of_words(text: str, dims: int = 32) -> list[float]:
    """A deterministic embedding: hashed word counts, so answers sharing words point the same way."""
    vector = [0.0] * dims
    for word in text.lower().split():
        vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % dims] += 1.0
    return vector


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
    a = p.parse_args()

    async def run() -> None:
        server = FakeServer(latency=a.latency, log=False)
        await server.serve(a.port)
        print(f"port {server.port}", flush=True)
        await asyncio.Event().wait()

    asyncio.run(run())


if __name__ == "__main__":
    main()
