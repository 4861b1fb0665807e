"""A new provider over HTTP is its request and reply mapping (issue 33): tests/calling/toy_http.py, a made-up wire
format in under 100 lines on harness/calling/backends/provider.py, plus its one entry in BACKENDS (here, and nowhere
else), runs end to end through the runner against a server on 127.0.0.1 that speaks that format: the bytes it
sends, its key kept out of everything stored, a 503 retried, answers scored, a rerun answered by the cache."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from harness.calling.backends import BACKENDS, Description
from harness.calling.backends.offline import overlap_score, query_pair
from harness.config.settings import ApiOptions, RunConfig
from harness.datasets import DATASETS
from harness.runner import run
from harness.types import HarnessError
from tests.fake_server import FakeServer

# The one line a new provider adds to harness/calling/backends/__init__.py BACKENDS.
TOY = Description(
    "tests.calling.toy_http", "api", chat="only", stop=True, key_env="TOY_HTTP_KEY", packages=("aiohttp",),
    prefixes=("toyhttp-",),
)  # fmt: skip
KEY = "toy-http-key-0123456789"
PROVIDER = Path(__file__).with_name("toy_http.py")


class ToyServer(FakeServer):
    """Speaks the toy format: the prompt's word overlap (what the offline `overlap` baseline answers), "no idea"
    (with the key echoed back, as providers echo a bad key) for prompts of an even length; a 503 first."""

    def __init__(self) -> None:
        super().__init__()
        self.bodies: list[dict[str, Any]] = []
        self.keys: list[str | None] = []
        self.words: dict[str, str] = {}  # prompt -> the words answered

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/rate", self._rate)
        return app

    async def _rate(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.bodies.append(body)
        self.keys.append(request.headers.get("X-Toy-Key"))
        if self.keys[-1] != KEY:  # echoing the key it was given, as providers do
            return web.json_response({"error": {"message": f"unknown key {self.keys[-1]}"}}, status=401)
        if len(self.bodies) == 1:
            return web.json_response({"error": {"message": "warming up"}}, status=503)
        prompt = body["input"]
        pair = query_pair(prompt)
        words = overlap_score(*pair, DATASETS["stsb"].label_range) if pair and len(prompt) % 2 else f"no idea ({KEY})"
        self.words[prompt] = words
        meter = {"read": len(prompt.split()), "wrote": len(words.split())}
        reply = {"result": {"words": words, "ended": "done"}, "engine": body["engine"], "meter": meter}
        return web.json_response(reply)


def _lines(run_dir: Path, name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / name).read_text(encoding="utf-8").splitlines()]


def test_a_new_http_provider_runs_end_to_end(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(BACKENDS, "toyhttp", TOY)
    monkeypatch.setenv("TOY_HTTP_KEY", KEY)
    with ToyServer() as server:
        api = ApiOptions(base_urls=(f"http://127.0.0.1:{server.port}",), cache=tmp_path / "cache.sqlite")
        config = RunConfig(model="toyhttp-1", dataset="stsb", limit=12, stop=("\n",), progress=False, api=api)
        first = run(dataclasses.replace(config, results_dir=tmp_path / "a"))
        sent = len(server.bodies)
        again = run(dataclasses.replace(config, results_dir=tmp_path / "b"))
        assert len(server.bodies) == sent  # the rerun was answered by the cache
    baseline = run(RunConfig(model="overlap", dataset="stsb", limit=12, progress=False, results_dir=tmp_path / "o"))

    samples, expected = _lines(first.run_dir, "samples.jsonl"), _lines(baseline.run_dir, "samples.jsonl")
    assert sent == 13 and server.keys == [KEY] * 13  # 12 prompts, one of them twice (the 503 retried)
    prompts = [s["prompt"] for s in samples]
    assert server.bodies[1:] == [
        {"engine": "toyhttp-1", "input": p, "budget": 20, "halt": ["\n"], "sampling": {"temperature": 0.0}}
        for p in server.words
    ]
    assert sorted(server.words) == sorted(prompts)
    unknown = [p for p in prompts if server.words[p].startswith("no idea")]
    assert 0 < len(unknown) < 12
    assert first.metrics["invalid"] == len(unknown) == again.metrics["invalid"]
    for s, base in zip(samples, expected, strict=True):
        if s["prompt"] in unknown:
            assert (s["valid"], s["output"]) == (False, "no idea ([redacted])")  # the key redacted
        else:
            assert (s["valid"], s["prediction"]) == (True, base["prediction"])  # the same word overlap
        assert s["usage"] == {"input_tokens": len(s["prompt"].split()), "output_tokens": len(s["output"].split())}
        assert s["finish_reason"] == "stop" and s["served_model"] == "toyhttp-1"
    assert [s["prediction"] for s in _lines(again.run_dir, "samples.jsonl")] == [s["prediction"] for s in samples]
    assert (again.metrics["cache"]["hits"], again.metrics["cache"]["misses"]) == (12, 0)
    assert first.metrics["dispatch"]["retries"] == 1
    config_json = json.loads((first.run_dir / "config.json").read_text(encoding="utf-8"))
    assert config_json["backend"] == "toyhttp"
    assert config_json["backend_params"]["endpoint"] == "/v1/rate"
    for path in [*first.run_dir.rglob("*"), tmp_path / "cache.sqlite"]:
        assert not path.is_file() or KEY.encode() not in path.read_bytes()
    assert len(PROVIDER.read_text(encoding="utf-8").splitlines()) < 100  # the provider: its mapping only


def test_its_errors_are_mapped_and_its_key_redacted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A 401 stops the run in one line (HTTPBackend's error mapping), without the key the server echoed."""
    wrong = "toy-http-wrong-key-000000"
    monkeypatch.setitem(BACKENDS, "toyhttp", TOY)
    monkeypatch.setenv("TOY_HTTP_KEY", wrong)
    with ToyServer() as server, pytest.raises(HarnessError) as err:
        api = ApiOptions(base_urls=(f"http://127.0.0.1:{server.port}",), cache=tmp_path / "cache.sqlite")
        run(RunConfig(model="toyhttp-1", dataset="stsb", limit=4, progress=False, api=api, results_dir=tmp_path / "r"))
    assert server.keys and set(server.keys) == {wrong}
    message = str(err.value)
    assert "HTTP 401: unknown key" in message and wrong not in message and "\n" not in message
