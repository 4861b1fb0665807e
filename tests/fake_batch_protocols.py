"""The batches of tests/fake_batch_server.py and the OpenAI Batch API over them (Anthropic: fake_batch_anthropic)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

EXPIRED = "This request could not be executed before the completion window expired."


@dataclass
class FakeBatch:
    id: str
    provider: str  # "openai" | "anthropic"
    items: list[tuple[str, dict[str, Any]]]  # (custom_id, body)
    created: float
    delay: float
    expire_after: float | None
    input_file_id: str | None = None
    endpoint: str = "/v1/chat/completions"
    metadata: dict[str, Any] | None = None
    invalid: str | None = None  # validation failure (OpenAI status "failed")
    cancelled_at: float | None = None
    results: dict[str, dict[str, Any]] = field(default_factory=dict)  # custom_id -> outcome, as processed
    output: list[str] = field(default_factory=list)  # OpenAI output / Anthropic result lines, once ended
    errors: list[str] = field(default_factory=list)  # OpenAI error-file lines, once ended
    ended_at: float | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None

    def status(self, now: float) -> str:
        """The OpenAI status word."""
        if self.invalid:
            return "failed"
        if self.ended_at is None:
            return "cancelling" if self.cancelled_at else "in_progress"
        if self.cancelled_at is not None:
            return "cancelled"
        return "completed" if len(self.results) == len(self.items) else "expired"

    def counts(self) -> tuple[int, int, int]:
        """(answered, failed, not processed)."""
        ok = sum(r["status"] == 200 for r in self.results.values())
        return ok, len(self.results) - ok, len(self.items) - len(self.results)

    def due(self, i: int) -> float:
        return self.created + self.delay * (i + 1) / len(self.items)


def iso(t: float | None) -> str | None:
    return None if t is None else datetime.fromtimestamp(t, UTC).isoformat().replace("+00:00", "Z")


def page(items: list[dict[str, Any]], limit: int, after: str | None) -> dict[str, Any]:
    """Newest first, `after` an id cursor, as both providers page their batch lists."""
    if after is not None:
        ids = [b["id"] for b in items]
        items = items[ids.index(after) + 1 :] if after in ids else []
    chunk = items[:limit]
    first, last = (chunk[0]["id"], chunk[-1]["id"]) if chunk else (None, None)
    return {"data": chunk, "has_more": len(items) > limit, "first_id": first, "last_id": last}


def dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"))


class OpenAIRoutes:
    """Files and Batch API, as the openai SDK calls them (base URL .../v1)."""

    def add_openai_routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/files", self._upload)
        app.router.add_get("/v1/files/{id}/content", self._content)
        app.router.add_post("/v1/batches", self._create_openai)
        app.router.add_get("/v1/batches", self._list_openai)
        app.router.add_get("/v1/batches/{id}", self._get_openai)
        app.router.add_post("/v1/batches/{id}/cancel", self._cancel_openai)

    async def _upload(self: Any, request: web.Request) -> web.StreamResponse:
        self.events["upload"].set()
        await self.stall("upload")
        form = await request.post()
        upload = form["file"]
        data = upload.file.read()  # type: ignore[union-attr]
        file_id = self.new_id("file-")
        self.files[file_id] = data
        return web.json_response(
            {
                "id": file_id,
                "object": "file",
                "bytes": len(data),
                "created_at": int(time.time()),
                "filename": upload.filename,
                "purpose": form["purpose"],
                "status": "processed",
            }  # type: ignore[union-attr]
        )

    async def _content(self: Any, request: web.Request) -> web.StreamResponse:
        data = self.files.get(request.match_info["id"])
        if data is None:
            return _openai_error(404, "No such file")
        return await self.stream_lines(request, data.decode().splitlines())

    async def _create_openai(self: Any, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        data = self.files.get(body["input_file_id"])
        if data is None:
            return _openai_error(404, f"No such file: {body['input_file_id']}")
        lines = [json.loads(line) for line in data.decode().splitlines() if line.strip()]
        ids = [line["custom_id"] for line in lines]
        invalid = None
        if len(set(ids)) != len(ids):
            invalid = "duplicate custom_id"
        elif any(line["url"] != body["endpoint"] or line["method"] != "POST" for line in lines):
            invalid = "a line's url or method does not match the batch endpoint"
        elif len({line["body"]["model"] for line in lines}) > 1:
            invalid = "all requests in a batch must use the same model"
        batch = FakeBatch(
            self.new_id("batch_"),
            "openai",
            [(line["custom_id"], line["body"]) for line in lines],
            time.time(),
            self.batch_delay,
            self.expire_after,
            body["input_file_id"],
            body["endpoint"],
            body.get("metadata"),
            invalid,
        )
        self.register(batch, lambda b: self.prompt_of("openai", b))
        await self.stall("create")
        return web.json_response(self.openai_batch(batch))

    async def _get_openai(self: Any, request: web.Request) -> web.StreamResponse:
        batch = self.batches.get(request.match_info["id"])
        if batch is None or batch.provider != "openai":
            return _openai_error(404, "No such batch")
        self.events["retrieved"].set()
        return web.json_response(self.openai_batch(batch))

    async def _list_openai(self: Any, request: web.Request) -> web.StreamResponse:
        mine = [self.openai_batch(b) for b in reversed(self.batches.values()) if b.provider == "openai"]
        limit = int(request.query.get("limit", 20))
        return web.json_response({"object": "list"} | page(mine, limit, request.query.get("after")))

    async def _cancel_openai(self: Any, request: web.Request) -> web.StreamResponse:
        batch = self.batches.get(request.match_info["id"])
        if batch is None:
            return _openai_error(404, "No such batch")
        batch.cancelled_at = batch.cancelled_at or time.time()
        return web.json_response(self.openai_batch(batch))

    def openai_batch(self: Any, batch: FakeBatch) -> dict[str, Any]:
        self.advance(batch)
        ok, failed, left = batch.counts()
        status = batch.status(time.time())
        errors = {"object": "list", "data": [{"code": "invalid_request", "message": batch.invalid}]}
        return {
            "id": batch.id,
            "object": "batch",
            "endpoint": batch.endpoint,
            "input_file_id": batch.input_file_id,
            "completion_window": "24h",
            "status": status,
            "created_at": int(batch.created),
            "in_progress_at": int(batch.created),
            "expires_at": int(batch.created + 86400),
            "completed_at": int(batch.ended_at) if status == "completed" else None,
            "expired_at": int(batch.ended_at) if status == "expired" else None,
            "cancelled_at": int(batch.ended_at) if status == "cancelled" else None,
            "failed_at": int(batch.created) if status == "failed" else None,
            "output_file_id": batch.output_file_id,
            "error_file_id": batch.error_file_id,
            "errors": errors if batch.invalid else None,
            "metadata": batch.metadata,
            "request_counts": {
                "total": len(batch.items),
                "completed": ok,
                "failed": failed + (left if batch.ended_at else 0),
            },
        }

    def finish_openai(self: Any, batch: FakeBatch) -> None:
        out, err = [], []
        for n, (custom_id, _) in enumerate(batch.items):
            line: dict[str, Any] = {"id": f"batch_req_{n}", "custom_id": custom_id, "response": None, "error": None}
            result = batch.results.get(custom_id)
            if result is None:
                code = "batch_cancelled" if batch.cancelled_at else "batch_expired"
                err.append(dumps(line | {"error": {"code": code, "message": EXPIRED}}))
            elif result["status"] == 200:
                out.append(
                    dumps(line | {"response": {"status_code": 200, "request_id": f"req_{n}", "body": result["body"]}})
                )
            else:
                error = {"message": result["message"], "type": "invalid_request_error", "param": None, "code": None}
                err.append(
                    dumps(
                        line
                        | {
                            "response": {
                                "status_code": result["status"],
                                "request_id": f"req_{n}",
                                "body": {"error": error},
                            }
                        }
                    )
                )
        for lines, attr in ((out, "output_file_id"), (err, "error_file_id")):
            if lines:
                file_id = self.new_id("file-")
                self.files[file_id] = ("\n".join(lines) + "\n").encode()
                setattr(batch, attr, file_id)


def _openai_error(status: int, message: str) -> web.Response:
    error = {"message": message, "type": "invalid_request_error", "param": None, "code": None}
    return web.json_response({"error": error}, status=status)
