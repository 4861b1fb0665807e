"""A toy provider over HTTP, written the way docs/extending.md "A new backend" says: this module (its request and
reply mapping on harness/calling/backends/provider.py `HTTPBackend`) and one entry in BACKENDS. Its wire format is
made up, so nothing here is copied from a shipped provider: tests/calling/test_toy_backend.py serves it on
127.0.0.1 and runs it end to end.

    POST {base}/v1/rate   X-Toy-Key: <key>
    {"engine": MODEL, "input": PROMPT, "budget": MAX_TOKENS, "halt": [STOP...], "sampling": {"temperature": T}}
    200 {"result": {"words": TEXT, "ended": "done" | "budget"}, "engine": MODEL, "meter": {"read": N, "wrote": M}}
    4xx/5xx {"error": {"message": TEXT}}
"""

from __future__ import annotations

from typing import Any

from harness.calling.backends.base import MalformedReply, usage_count
from harness.calling.backends.provider import HTTPBackend
from harness.types import Completion, RateLimit, Request, Usage

ENDED = {"done": "stop", "budget": "length"}  # its words for why the answer ended, in OpenAI's


class ToyHTTPBackend(HTTPBackend):
    name = "toyhttp"
    endpoint = "/v1/rate"
    default_url = "https://toy.invalid"  # its hosted API, were there one

    def headers(self, api_key: str) -> dict[str, str]:
        return {"X-Toy-Key": api_key}

    def body(self, request: Request) -> dict[str, Any]:
        return {
            "engine": self.model,
            "input": request.prompt,
            "budget": request.max_tokens,
            "halt": self.stop,
            "sampling": {"temperature": request.temperature},
        }

    def describe(self) -> dict[str, object]:
        return {"api": "toy rate", "endpoint": self.endpoint, "base_urls": sorted(self.base_urls), "halt": self.stop}

    def completion_from(self, request_id: str, data: Any, limits: RateLimit | None = None) -> Completion:
        result = data.get("result") if isinstance(data, dict) else None
        if not isinstance(result, dict) or not isinstance(result.get("words"), str):
            raise MalformedReply("malformed reply: no result words")
        meter, ended = data.get("meter"), result.get("ended")
        usage = Usage(usage_count(meter, "read"), usage_count(meter, "wrote"))
        finish = ENDED.get(ended, ended) if isinstance(ended, str) else None
        return self.answer(request_id, result["words"], usage, finish, data.get("engine"), limits)


from_config = ToyHTTPBackend.from_config  # what BACKENDS calls
