"""The backend interface: two explicit kinds, each backend exactly one, every attribute required."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

import pytest

from harness.calling.backends import BACKENDS, make_backend, output_budget
from harness.calling.backends.base import LocalBackend, RemoteBackend
from harness.calling.backends.openai import OpenAIBackend
from harness.config.settings import ApiOptions, RunConfig
from harness.types import Completion, HarnessError, Request

KEY = "sk-test-0123456789"


KINDS = [
    ("overlap", None, LocalBackend),
    ("random", None, LocalBackend),
    ("gpt-4o", "openai", RemoteBackend),
    ("claude-3-5-haiku", "anthropic", RemoteBackend),
]


@pytest.mark.parametrize(("model", "backend", "kind"), KINDS)
def test_each_built_backend_is_exactly_one_kind(
    model: str, backend: str | None, kind: type, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    built = make_backend(RunConfig(model=model, backend=backend))
    assert isinstance(built, kind)
    assert isinstance(built, LocalBackend) != isinstance(built, RemoteBackend)
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


def test_every_wired_module_builds_its_backend_and_nothing_else_is_wired() -> None:
    assert [n for n, d in BACKENDS.items() if d.module] == ["offline", "openai", "anthropic", "vllm", "hf"]
    with pytest.raises(HarnessError, match="unknown backend 'sentence-transformers'"):
        make_backend(RunConfig(model="m", backend="sentence-transformers"))
