"""The backend interface: two explicit kinds, each backend exactly one, every attribute required."""

from __future__ import annotations

import importlib
import typing
from collections.abc import AsyncIterator, Sequence

import pytest

from harness.calling.backends import BACKENDS
from harness.calling.backends.base import LocalBackend, RemoteBackend
from harness.calling.backends.choose import make_backend, output_budget
from harness.calling.backends.openai import OpenAIBackend
from harness.config.settings import ApiOptions, RunConfig
from harness.types import Completion, HarnessError, Request

KEY = "sk-test-0123456789"


@pytest.mark.parametrize("name", [n for n, d in BACKENDS.items() if d.module])
def test_each_wired_backend_is_exactly_one_kind(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every backend the table wires (its list is the table's, not one kept here): an API is a RemoteBackend, the
    rest LocalBackends. Engines (a model loaded here) are judged by what their from_config returns, unbuilt."""
    d = BACKENDS[name]
    kind, other = (RemoteBackend, LocalBackend) if d.remote else (LocalBackend, RemoteBackend)
    module = importlib.import_module(d.module)  # type: ignore[arg-type]
    if d.kind == "engine":
        returned = typing.get_type_hints(module.from_config)["return"]
        assert issubclass(returned, kind) and not issubclass(returned, other)
        return
    if d.key_env:
        monkeypatch.setenv(d.key_env, KEY)
    for model in d.models or (f"{d.prefixes[0]}test",):  # a name the entry says implies it
        built = make_backend(RunConfig(model=model, backend=name))
        assert isinstance(built, kind) and not isinstance(built, other)
        if isinstance(built, RemoteBackend):
            assert not hasattr(built, "complete")  # dispatch calls `send`; no unused batch method
            assert isinstance(built.chat, bool) and built.endpoint.startswith("/v1/")
        else:
            assert isinstance(built.cacheable, bool)


def test_a_backend_missing_a_method_of_its_kind_cannot_be_built() -> None:
    class NoSend(RemoteBackend):
        name, model, chat, endpoint = "x", "m", True, "/v1/x"

        def describe(self) -> dict[str, object]:
            return {}

    class Local(LocalBackend):
        name, model = "y", "m"

        async def complete(self, requests: Sequence[Request]) -> AsyncIterator[Completion]:
            for r in requests:
                yield Completion(r.id, "1")

        def describe(self) -> dict[str, object]:
            return {}

    with pytest.raises(TypeError, match="abstract"):
        NoSend()  # type: ignore[abstract]
    assert Local().cacheable is True  # the default a local backend overrides only when its answers are free


@pytest.mark.parametrize(("model", "reasoning"), [("gpt-4o", None), ("o3-mini", None), ("gpt-4o", True)])
def test_the_dry_run_asks_the_backends_own_output_budget(model: str, reasoning: bool | None) -> None:
    """--dry-run builds no backend, yet its output budget is the one the built backend would give."""
    api = ApiOptions(reasoning=reasoning, reasoning_tokens=777)
    request = Request("1", "p", max_tokens=20)
    built = OpenAIBackend(model, KEY, reasoning=reasoning, reasoning_tokens=777)
    assert output_budget(RunConfig(model=model, api=api), request) == built.output_budget(request)
    assert built.output_budget(request) == (777 if built.reasoning else 20)


@pytest.mark.parametrize("name", [n for n, d in BACKENDS.items() if d.module and d.remote])
@pytest.mark.parametrize("model", ["o3-mini", "qwen3-8b", "plain-model"])  # OpenAI's reasoning name, an open one
@pytest.mark.parametrize("reasoning", [None, True, False])
@pytest.mark.parametrize("chat", [None, True])
@pytest.mark.parametrize("base_urls", [(), ("http://127.0.0.1:9/v1",)])
def test_an_apis_own_reasoning_rule_is_the_one_its_line_states(
    name: str,
    model: str,
    reasoning: bool | None,
    chat: bool | None,
    base_urls: tuple[str, ...],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An API's class states its reasoning rule (`thinking_rule`: a provider imports no table), its line states it for
    --dry-run and --max-cost, which build nothing: the budgets the two give agree, for every remote line."""
    d = BACKENDS[name]
    monkeypatch.setenv(d.key_env or "", KEY)
    api = ApiOptions(reasoning=reasoning, reasoning_tokens=777, base_urls=base_urls)
    config = RunConfig(model=model, backend=name, chat=chat, api=api)
    request = Request("1", "p", max_tokens=20)
    assert output_budget(config, request) == make_backend(config).output_budget(request)


def test_every_wired_module_builds_its_backend_and_nothing_else_is_wired() -> None:
    for name, d in BACKENDS.items():
        if d.module is not None:
            assert callable(importlib.import_module(d.module).from_config), name
        else:  # an embedder only (sentence-transformers): no run scores with it directly
            with pytest.raises(HarnessError, match=f"unknown backend '{name}'"):
                make_backend(RunConfig(model="m", backend=name))
