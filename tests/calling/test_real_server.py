"""The harness's OpenAI backend against a real third-party server: `transformers serve` with SmolLM2-135M-Instruct.

The server (tests/servers/transformers_serve.py) is transformers' own OpenAI-compatible server, started as its own
process on 127.0.0.1 and pinned to the converted SmolLM2 folder (harness/calling/backends/local_models.py),
float32 on CPU. Checked:
prompt tokens the server reports equal the rendered prompt's (raw) or the chat template's (chat); answers equal
the in-process hf backend's for the same prompts and weights; two servers behind a repeated --base-url share the
load and answer as one does. Bounded: 8 STS-B queries per run, one chat run reused by two tests.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from harness.calling.backends import local_models
from harness.cli.main import main, run_parser
from harness.config.settings import LocalOptions
from harness.types import Completion, Request
from tests.real_model import MODEL, requires_serve
from tests.servers.transformers_serve import Server, transformers_serve

# slow: SmolLM2 answering through real servers (minutes on two cores); one worker holds the module's servers.
pytestmark = [requires_serve, pytest.mark.slow, pytest.mark.xdist_group("real_server")]
N = 8
CHAT_ENDPOINT, RAW_ENDPOINT = "/v1/chat/completions", "/v1/completions"


@pytest.fixture(scope="module")
def folder() -> Path:
    return local_models.model_dir(MODEL)


@pytest.fixture(scope="module")
def server(folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with transformers_serve(folder, tmp_path_factory.mktemp("serve-a")) as s:
        yield s


@pytest.fixture(scope="module")
def in_process(folder: Path) -> Any:
    """The hf backend on the same weights, one prompt per generate call (no padding), as the server runs them."""
    from harness.calling.backends.hf import HFBackend

    backend = HFBackend(MODEL, LocalOptions(batch_size=1))
    backend.load()
    return backend


def hf_answers(backend: Any, prompts: Sequence[str], chat: bool) -> list[Completion]:
    backend.chat = chat

    async def collect() -> dict[str, Completion]:
        return {c.request_id: c async for c in backend.complete([Request(str(i), p) for i, p in enumerate(prompts)])}

    done = asyncio.run(collect())
    return [done[str(i)] for i in range(len(prompts))]


@pytest.fixture(scope="module")
def chat_run(server: Server, folder: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    """One harness run in chat mode against one server: (run folder, samples)."""
    tmp = tmp_path_factory.mktemp("chat")
    return tmp / "chat", run_harness(tmp, "chat", folder, [server], "--chat")


def run_harness(tmp: Path, run_id: str, folder: Path, servers: Sequence[Server], *mode: str) -> list[dict[str, Any]]:
    """One harness run over the server(s); returns samples.jsonl (and checks the run finished cleanly)."""
    urls = [arg for s in servers for arg in ("--base-url", s.base_url)]
    args = ["--backend", "openai", "--model", str(folder), *urls, "--dataset", "stsb", "--limit", str(N)]
    # The server answers one request at a time: 4 in flight keep each server busy without queueing past the
    # per-attempt timeout on a loaded CPU.
    args += ["--concurrency", "4", "--no-progress", "--no-cache"]
    rc = main([*args, *mode, "--results-dir", str(tmp), "--run-id", run_id])
    assert rc == 0
    return [json.loads(x) for x in (tmp / run_id / "samples.jsonl").read_text().splitlines()]


def chat_tokens(tokenizer: Any, prompt: str) -> int:
    messages = [{"role": "user", "content": prompt}]
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    return len(ids["input_ids"] if hasattr(ids, "keys") else ids)  # transformers 5: a BatchEncoding


def check_recorded(samples: list[dict[str, Any]], run_dir: Path, expected_tokens: list[int]) -> None:
    """Prompt tokens as the server reported them; per sample where the run records them (finish_reason, usage)."""
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["errors"] == 0 and metrics["n"] == N
    assert metrics["usage"]["input_tokens"] == sum(expected_tokens)
    for s, tokens in zip(samples, expected_tokens, strict=True):
        if "usage" in s and s["usage"] is not None:  # per-sample usage and finish_reason (the h10a fields)
            assert s["usage"]["input_tokens"] == tokens
            assert 1 <= s["usage"]["output_tokens"] <= 20
        if "finish_reason" in s:
            assert s["finish_reason"] in ("stop", "length")


def agreement(a: Sequence[str | None], b: Sequence[str | None]) -> float:
    return sum(x == y for x, y in zip(a, b, strict=True)) / len(a)


def test_chat_prompt_tokens_are_the_chat_templates_and_answers_equal_in_process(
    server: Server, chat_run: tuple[Path, list[dict]], in_process: Any
) -> None:
    run_dir, samples = chat_run
    tok = in_process.load().tokenizer
    check_recorded(samples, run_dir, [chat_tokens(tok, s["prompt"]) for s in samples])
    assert server.requests_served(CHAT_ENDPOINT) >= N
    local = hf_answers(in_process, [s["prompt"] for s in samples], chat=True)
    rate = agreement([s["output"] for s in samples], [c.text for c in local])
    print(f"chat: server vs in-process hf agreement {rate:.0%} over {N}")
    assert rate == 1.0  # same float32 weights, same template, one prompt per forward pass on both sides


def test_raw_completions_via_the_sdk_match_in_process_tokens_and_answers(
    server: Server, folder: Path, in_process: Any, tmp_path: Path
) -> None:
    """/v1/completions with the rendered prompt verbatim: what `--no-chat` sends (checked here with the SDK)."""
    from openai import OpenAI

    assert main(["--model", "overlap", "--dataset", "stsb", "--limit", str(N), "--results-dir", str(tmp_path),
                 "--run-id", "p", "--no-progress"]) == 0  # fmt: skip
    prompts = [json.loads(x)["prompt"] for x in (tmp_path / "p" / "samples.jsonl").read_text().splitlines()]
    client = OpenAI(base_url=server.base_url, api_key="EMPTY", max_retries=0)
    replies = [client.completions.create(model=str(folder), prompt=p, max_tokens=20, temperature=0) for p in prompts]
    tok = in_process.load().tokenizer
    assert [r.usage.prompt_tokens for r in replies] == [len(tok(p)["input_ids"]) for p in prompts]
    assert all(r.choices[0].finish_reason in ("stop", "length") for r in replies)
    local = hf_answers(in_process, prompts, chat=False)
    rate = agreement([r.choices[0].text for r in replies], [c.text for c in local])
    print(f"raw (SDK): server vs in-process hf agreement {rate:.0%} over {N}")
    assert rate == 1.0
    assert [r.usage.completion_tokens for r in replies] == [c.usage.output_tokens for c in local]


def _raw_switch() -> list[str]:
    """The harness's switch for raw prompts over --base-url (`--no-chat`: /v1/completions)."""
    return ["--no-chat"]


raw_switch_present = "--no-chat" in run_parser().format_help()


@pytest.mark.skipif(not raw_switch_present, reason="--no-chat (raw /v1/completions over --base-url) not in this build")
def test_raw_harness_run_sends_the_prompt_verbatim(
    server: Server, folder: Path, in_process: Any, tmp_path: Path
) -> None:
    before = server.requests_served(RAW_ENDPOINT)
    samples = run_harness(tmp_path, "raw", folder, [server], *_raw_switch())
    tok = in_process.load().tokenizer
    check_recorded(samples, tmp_path / "raw", [len(tok(s["prompt"])["input_ids"]) for s in samples])
    assert server.requests_served(RAW_ENDPOINT) - before >= N
    local = hf_answers(in_process, [s["prompt"] for s in samples], chat=False)
    rate = agreement([s["output"] for s in samples], [c.text for c in local])
    print(f"raw (harness): server vs in-process hf agreement {rate:.0%} over {N}")
    assert rate == 1.0


def test_two_servers_share_the_load_and_answer_as_one(
    server: Server, chat_run: tuple[Path, list[dict]], folder: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    tmp_path = tmp_path_factory.mktemp("two")
    one = chat_run[1]
    with transformers_serve(folder, tmp_path_factory.mktemp("serve-b")) as second:
        before = [server.requests_served(CHAT_ENDPOINT), second.requests_served(CHAT_ENDPOINT)]
        two = run_harness(tmp_path, "two", folder, [server, second], "--chat")
        after = [server.requests_served(CHAT_ENDPOINT), second.requests_served(CHAT_ENDPOINT)]
    shares = [a - b for a, b in zip(after, before, strict=True)]
    print(f"two servers: requests per server {shares}")
    assert sum(shares) == N and min(shares) >= 1
    assert [s["output"] for s in two] == [s["output"] for s in one]
    assert [s["prediction"] for s in two] == [s["prediction"] for s in one]


def test_a_server_that_ignores_logprobs_and_response_format_is_reported_as_such(
    server: Server, folder: Path, tmp_path: Path
) -> None:
    """transformers serve drops `logprobs` and `response_format` (it lists them as unsupported): the expected run
    says no reply held log-probabilities (not that the model put no mass on the scores), and the constrained run's
    invalid rate shows the constraint was not held."""
    expected = run_harness(tmp_path, "e", folder, [server], "--chat", "--scoring", "expected")
    metrics = json.loads((tmp_path / "e" / "metrics.json").read_text())
    assert metrics["expected_no_logprobs"] == N and metrics["expected_missing"] == 0 and metrics["n_expected"] == 0
    assert all("expected_mass" not in s for s in expected)
    constrained = run_harness(tmp_path, "c", folder, [server], "--chat", "--constrain")
    sent = [s["output"] for s in constrained]
    assert sum(not s["valid"] for s in constrained) == sum(not o.strip().isdigit() for o in sent)
