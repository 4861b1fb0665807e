"""A toy provider for tests/calling/test_new_backend.py, written the way docs/extending.md "A new backend" says:
this one module (a RemoteBackend and its `from_config(config, line)`) plus one entry in harness/calling/backends
BACKENDS.

It answers in-process, never over a network: the word overlap of the prompt's two sentences (what the offline
`overlap` baseline answers, so a test can compare the two runs value for value), and bills one input token per
word of the prompt and one output token per answer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.calling.backends.base import RemoteBackend, api_key
from harness.calling.backends.description import Description
from harness.calling.backends.offline import overlap_score, query_pair
from harness.config.settings import RunConfig
from harness.datasets.choose import describe_dataset
from harness.types import Completion, Request, Usage


def from_config(config: RunConfig, line: Description) -> ToyBackend:
    """Built from the run's settings and its own line of BACKENDS: the key its `key_env` names, its chat mode."""
    assert line.key_env is not None
    return ToyBackend(
        config.model,
        api_key(line.key_env, "toy", config.api.base_urls),
        describe_dataset(config.dataset).label_range,
        chat=line.chat_mode(config),
        stop=config.stop,
    )


class ToyBackend(RemoteBackend):
    name = "toy"
    endpoint = "/v1/toy"

    def __init__(self, model: str, key: str, label_range: tuple[float, float], chat: bool, stop: Sequence[str]) -> None:
        self.model, self._key, self.label_range = model, key, label_range
        self.chat, self.stop = chat, list(stop)
        self.sent: list[dict[str, Any]] = []

    def describe(self) -> dict[str, object]:
        return {"toy": "word overlap", "chat": self.chat, "stop": self.stop}

    def body(self, request: Request) -> dict[str, Any]:
        return {"model": self.model, "messages": [{"role": "user", "content": request.prompt}], "stop": self.stop}

    async def send(self, request: Request) -> Completion:
        self.sent.append(self.body(request))
        pair = query_pair(request.prompt)
        text = overlap_score(*pair, self.label_range) if pair else "no pair"
        usage = Usage(len(request.prompt.split()), 1)
        return Completion(request.id, text, usage=usage, finish_reason="stop", served_model=self.model)

    def output_budget(self, request: Request) -> int:
        return request.max_tokens

    async def aclose(self) -> None:
        return None
