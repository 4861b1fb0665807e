"""Anthropic's Message Batches over tests/fake_batch_server.py's batches: routes and wire format."""

from __future__ import annotations

import re
import time
from typing import Any

from aiohttp import web

from tests.fake_batch_protocols import FakeBatch, dumps, iso, page

CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


class AnthropicRoutes:
    """Message Batches, as the anthropic SDK calls them (base URL without /v1)."""

    def add_anthropic_routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/messages/batches", self._create_anthropic)
        app.router.add_get("/v1/messages/batches", self._list_anthropic)
        app.router.add_get("/v1/messages/batches/{id}", self._get_anthropic)
        app.router.add_post("/v1/messages/batches/{id}/cancel", self._cancel_anthropic)
        app.router.add_get("/v1/messages/batches/{id}/results", self._results)

    async def _create_anthropic(self: Any, request: web.Request) -> web.StreamResponse:
        requests = (await request.json())["requests"]
        ids = [r["custom_id"] for r in requests]
        if len(set(ids)) != len(ids) or not all(CUSTOM_ID.match(i) for i in ids):
            return _anthropic_error(400, "custom_id values must be unique and match ^[a-zA-Z0-9_-]{1,64}$")
        batch = FakeBatch(
            self.new_id("msgbatch_"),
            "anthropic",
            [(r["custom_id"], r["params"]) for r in requests],
            time.time(),
            self.batch_delay,
            self.expire_after,
        )
        self.register(batch, lambda b: self.prompt_of("anthropic", b))
        await self.stall("create")
        return web.json_response(self.anthropic_batch(batch))

    async def _get_anthropic(self: Any, request: web.Request) -> web.StreamResponse:
        batch = self.batches.get(request.match_info["id"])
        if batch is None or batch.provider != "anthropic":
            return _anthropic_error(404, "No such batch")
        self.events["retrieved"].set()
        return web.json_response(self.anthropic_batch(batch))

    async def _list_anthropic(self: Any, request: web.Request) -> web.StreamResponse:
        mine = [self.anthropic_batch(b) for b in reversed(self.batches.values()) if b.provider == "anthropic"]
        return web.json_response(page(mine, int(request.query.get("limit", 20)), request.query.get("after_id")))

    async def _cancel_anthropic(self: Any, request: web.Request) -> web.StreamResponse:
        batch = self.batches.get(request.match_info["id"])
        if batch is None:
            return _anthropic_error(404, "No such batch")
        batch.cancelled_at = batch.cancelled_at or time.time()
        return web.json_response(self.anthropic_batch(batch))

    async def _results(self: Any, request: web.Request) -> web.StreamResponse:
        batch = self.batches.get(request.match_info["id"])
        if batch is None or batch.ended_at is None:
            return _anthropic_error(404, "No results for this batch (yet)")
        return await self.stream_lines(request, batch.output)

    def anthropic_batch(self: Any, batch: FakeBatch) -> dict[str, Any]:
        self.advance(batch)
        ok, failed, left = batch.counts()
        ended = batch.ended_at is not None
        counts = {
            "processing": 0 if ended else len(batch.items),
            "succeeded": ok if ended else 0,
            "errored": failed if ended else 0,
            "canceled": left if ended and batch.cancelled_at else 0,
            "expired": left if ended and not batch.cancelled_at else 0,
        }
        return {
            "id": batch.id,
            "type": "message_batch",
            "processing_status": "ended" if ended else ("canceling" if batch.cancelled_at else "in_progress"),
            "request_counts": counts,
            "created_at": iso(batch.created),
            "expires_at": iso(batch.created + 86400),
            "ended_at": iso(batch.ended_at),
            "cancel_initiated_at": iso(batch.cancelled_at),
            "archived_at": None,
            "results_url": f"http://127.0.0.1:{self.port}/v1/messages/batches/{batch.id}/results" if ended else None,
        }

    def finish_anthropic(self: Any, batch: FakeBatch) -> None:
        for custom_id, _ in batch.items:
            result = batch.results.get(custom_id)
            if result is None:
                outcome: dict[str, Any] = {"type": "canceled" if batch.cancelled_at else "expired"}
            elif result["status"] == 200:
                outcome = {"type": "succeeded", "message": result["body"]}
            else:
                kind = "invalid_request_error" if result["status"] == 400 else "api_error"
                outcome = {
                    "type": "errored",
                    "error": {"type": "error", "error": {"type": kind, "message": result["message"]}},
                }
            batch.output.append(dumps({"custom_id": custom_id, "result": outcome}))


def _anthropic_error(status: int, message: str) -> web.Response:
    kind = "not_found_error" if status == 404 else "invalid_request_error"
    return web.json_response({"type": "error", "error": {"type": kind, "message": message}}, status=status)
