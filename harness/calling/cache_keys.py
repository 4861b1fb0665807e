"""The response cache's keys: a hash of everything that decides an answer.

`request_key` is the definition (SHA-256 of a sorted-key JSON object). `KeyMaker` computes the same keys for
the many requests of one run faster: the parts every key shares (backend, model, describe()) are encoded once
and only the prompt and the two per-request numbers are encoded per request. Our dispatch spent ~15 % of its
CPU re-encoding the shared parts (issue 12); tests/calling/test_cache_keys.py checks the two agree.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from json.encoder import encode_basestring_ascii

from harness.calling.backends.base import Backend
from harness.types import Request

SCHEMA_VERSION = 1  # part of every key: a change in what a key covers starts a fresh keyspace
_ENCODER = json.JSONEncoder(sort_keys=True, default=str)  # what json.dumps(..., sort_keys=True, default=str) uses


def request_key(backend: Backend, request: Request, params: dict[str, object] | None = None) -> str:
    """Hash of everything that decides the answer: backend, model, endpoint and decoding (describe()), prompt.
    `params`: backend.describe(), when the caller already has it (it is the same for every request)."""
    identity = {
        "v": SCHEMA_VERSION,
        "backend": backend.name,
        "model": backend.model,
        "params": backend.describe() if params is None else params,
        "prompt": request.prompt,
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
    }
    if request.sample:  # only when set: the keys of every request made before `sample` existed stay the same
        identity["sample"] = request.sample
    if request.unpooled:  # likewise: an instruction left out of pooling is another vector
        identity["unpooled"] = request.unpooled
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()


def served_params(params: dict[str, object], served: object) -> dict[str, object]:
    """describe() with the servers' own account of what they serve (backends/served.py) in place of their
    addresses: the same model file behind another port is the same key; another file behind the same port is not."""
    return {k: v for k, v in params.items() if k != "base_urls"} | {"served": served}


@lru_cache(maxsize=256)
def _scalar(value: object) -> str:
    """A per-request number (max_tokens, temperature) as JSON; a run has a handful of distinct ones."""
    return _ENCODER.encode(value)


class KeyMaker:
    """request_key(backend, r, params) for every r, with the shared parts encoded once. The JSON is spelled out
    in request_key's sorted key order: backend, max_tokens, model, params, prompt, [sample,] temperature,
    [unpooled,] v."""

    def __init__(self, backend: Backend, params: dict[str, object] | None = None) -> None:
        params = backend.describe() if params is None else params
        self._head = f'{{"backend": {_ENCODER.encode(backend.name)}, "max_tokens": '
        self._middle = f', "model": {_ENCODER.encode(backend.model)}, "params": {_ENCODER.encode(params)}, "prompt": '
        self._tail = f', "v": {SCHEMA_VERSION}}}'

    def __call__(self, request: Request) -> str:
        prompt = request.prompt
        # json.dumps writes a str subclass or a non-str through `default=str`: leave those to the definition.
        encoded = encode_basestring_ascii(prompt) if type(prompt) is str else _ENCODER.encode(prompt)
        sample = f', "sample": {_scalar(request.sample)}' if request.sample else ""
        unpooled = f', "unpooled": {_scalar(request.unpooled)}' if request.unpooled else ""
        text = (
            f"{self._head}{_scalar(request.max_tokens)}{self._middle}{encoded}{sample}"
            f', "temperature": {_scalar(request.temperature)}{unpooled}{self._tail}'
        )
        return hashlib.sha256(text.encode()).hexdigest()
