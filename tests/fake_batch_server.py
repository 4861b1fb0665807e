"""The fake server (tests/fake_server.py) plus both providers' batch protocols, for the real SDKs.

OpenAI: `POST /v1/files` (multipart, purpose=batch), `GET /v1/files/{id}/content`, `POST /v1/batches`,
`GET /v1/batches/{id}`, `GET /v1/batches` (newest first, `after` cursor), `POST /v1/batches/{id}/cancel`.
Anthropic: `POST /v1/messages/batches`, `GET /v1/messages/batches/{id}`, `GET /v1/messages/batches`
(newest first, `after_id` cursor), `POST .../cancel`, `GET .../results` (JSONL at an absolute results_url).

A batch's request i finishes `delay * (i + 1) / n` seconds after creation; one that has not finished when
`expire_after` seconds have passed expires. Each request is answered by the one-by-one server's own code
(same `plan` and `answer`, same reply body), so batch and one-by-one answers are identical.
`submitted` counts every prompt each time a batch carrying it is created: a test asserts each is 1.

Result files that disagree with what was sent: `tamper(provider, records) -> records` rewrites a batch's result
lines (parsed; OpenAI's output file, Anthropic's results) when it ends: duplicate a custom_id with another answer,
add ids nobody sent.

Kill tests: `hang` names stages that stall once ("upload": the file upload; "create": the batch is made
and its create reply never sent; "download": half of a result file is sent, then nothing), and `events`
fire when a stage is reached ("upload", "created", "retrieved", "download").
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from aiohttp import web

from tests.fake_batch_anthropic import AnthropicRoutes
from tests.fake_batch_protocols import FakeBatch, OpenAIRoutes
from tests.fake_replies import GATEWAY_200, key_forms
from tests.fake_server import CHAT, MESSAGES, RAW, FakeServer

STAGES = ("upload", "created", "retrieved", "download")


class FakeBatchServer(OpenAIRoutes, AnthropicRoutes, FakeServer):
    max_body = 256 * 1000 * 1000  # the providers' largest batch (Anthropic: 256 MB)

    def __init__(
        self,
        batch_delay: float = 0.0,
        expire_after: float | None = None,
        tamper: Callable[[str, list[dict[str, Any]]], list[dict[str, Any]]] | None = None,
        **kw: Any,
    ) -> None:
        super().__init__(**kw)
        self.tamper = tamper
        self.batch_delay = batch_delay
        self.expire_after = expire_after
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, FakeBatch] = {}
        self.submitted: Counter[str] = Counter()  # prompt -> times it arrived inside a created batch
        self.batch_answered: Counter[str] = Counter()  # prompt -> times a batch processed it with an answer
        self.hang: set[str] = set()
        self.events = {s: threading.Event() for s in STAGES}
        self.downloads = 0
        self._ids = 0
        self.batch_key = ""  # what a "400-echo" line echoes (a batch's lines carry no key of their own)

    def app(self) -> web.Application:
        app = super().app()
        self.add_openai_routes(app)
        self.add_anthropic_routes(app)
        return app

    def new_id(self, prefix: str) -> str:
        self._ids += 1
        return f"{prefix}{self._ids:06d}"

    async def stall(self, stage: str) -> bool:
        """Hang here (until the server stops) if the test asked for it; once per stage."""
        if stage not in self.hang:
            return False
        self.hang.discard(stage)
        assert self._stop is not None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop.wait(), 60)
        return True

    def register(self, batch: FakeBatch, prompt_of: Any) -> None:
        self.batches[batch.id] = batch
        for _, body in batch.items:
            self.submitted[prompt_of(body)] += 1
        self.events["created"].set()

    # --- processing: the one-by-one server's code answers every request ---------------------------

    def advance(self, batch: FakeBatch, now: float | None = None) -> None:
        """Process the requests that are due; end the batch when all are, or when it expires or is cancelled."""
        now = time.time() if now is None else now
        if batch.ended_at is not None or batch.invalid:
            batch.ended_at = batch.ended_at or now
            return
        stop = min(t for t in (now, batch.cancelled_at, self._expiry(batch)) if t is not None)
        for i, (custom_id, body) in enumerate(batch.items):
            if custom_id not in batch.results and batch.due(i) <= stop:
                batch.results[custom_id] = self.process(batch.provider, body)
        if len(batch.results) == len(batch.items) or stop < now:
            batch.ended_at = now
            self.finish(batch)

    def _expiry(self, batch: FakeBatch) -> float | None:
        return None if batch.expire_after is None else batch.created + batch.expire_after

    def process(self, provider: str, body: dict[str, Any]) -> dict[str, Any]:
        prompt = self.prompt_of(provider, body)
        attempt = self.attempts.get(prompt, 0)
        self.attempts[prompt] = attempt + 1
        action = self.plan(prompt, attempt)
        if action in ("400", "500", "429"):
            status = int(action)
            return {"status": status, "message": f"request failed inside the batch ({status})"}
        if action == "400-quote":  # a validation error quoting the request, as tests/fake_replies.py's
            return {"status": 400, "message": f"Input should be a valid list: input_value={prompt!r}"}
        if action in GATEWAY_200:  # a 200 that holds no answer (tests/fake_replies.py)
            return {"status": 200, "body": GATEWAY_200[action]}
        if action == "400-echo":  # the key in every encoding, cut in two (tests/fake_replies.py key_forms)
            said, rest = key_forms(self.batch_key)
            return {"status": 400, "message": f"{said} / {rest}"}
        self.batch_answered[prompt] += 1
        # The endpoint's own reply (tests/fake_server.py): Messages, Chat Completions, or raw Completions.
        endpoint = MESSAGES if provider == "anthropic" else RAW if "prompt" in body else CHAT
        return {"status": 200, "body": self.reply_body(endpoint, prompt, action, body["model"], request=body)}

    @staticmethod
    def prompt_of(provider: str, body: dict[str, Any]) -> str:
        if "prompt" in body:  # a raw /v1/completions line
            return str(body["prompt"])
        content = body["messages"][-1]["content"]
        return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)

    def finish(self, batch: FakeBatch) -> None:
        if batch.provider == "openai":
            self.finish_openai(batch)
        else:
            self.finish_anthropic(batch)
        if self.tamper is None:
            return
        if batch.provider == "anthropic":
            batch.output = [json.dumps(r) for r in self.tamper("anthropic", [json.loads(x) for x in batch.output])]
        elif batch.output_file_id is not None:
            lines = self.files[batch.output_file_id].decode().splitlines()
            records = self.tamper("openai", [json.loads(x) for x in lines])
            self.files[batch.output_file_id] = "".join(json.dumps(r) + "\n" for r in records).encode()

    # --- shared helpers ------------------------------------------------------------------------------

    async def stream_lines(self, request: web.Request, lines: list[str]) -> web.StreamResponse:
        """Send JSONL line by line; with "download" in `hang`, send half and stall."""
        self.downloads += 1
        self.events["download"].set()
        response = web.StreamResponse(headers={"Content-Type": "application/binary"})
        await response.prepare(request)
        half = len(lines) // 2 if "download" in self.hang else None
        for n, line in enumerate(lines):
            if half is not None and n == half:
                await self.stall("download")
                return response
            await response.write(line.encode() + b"\n")
        await response.write_eof()
        return response


def main() -> None:
    """Serve until killed, for trying --batch by hand: `python tests/fake_batch_server.py --delay 5`."""
    import argparse

    p = argparse.ArgumentParser(description="Serve the fake OpenAI/Anthropic API with batches on 127.0.0.1.")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--delay", type=float, default=5.0, help="seconds a batch takes")
    p.add_argument("--expire-after", type=float, help="seconds after which an unfinished batch expires")
    a = p.parse_args()

    async def serve() -> None:
        server = FakeBatchServer(batch_delay=a.delay, expire_after=a.expire_after)
        await server.serve(a.port)
        print(f"port {server.port}", flush=True)
        await asyncio.Event().wait()

    asyncio.run(serve())


if __name__ == "__main__":
    main()
