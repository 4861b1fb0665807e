"""--scoring expected over the OpenAI wire: what is asked, how both reply shapes are read, and what a run reports,
with the real openai SDK against tests/fake_server.py (log-probabilities from tests/fake_protocols.py)."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from typing import Any

import pytest

from harness.calling.backends.openai import OpenAIBackend
from harness.calling.backends.openai_logprobs import TOP_LOGPROBS, score_probs_from
from harness.cli.main import main
from harness.scoring.expected import expected_score
from harness.types import Completion, Request
from tests.fake_batch_server import FakeBatchServer
from tests.fake_protocols import logprobs
from tests.fake_server import FakeServer

LN = math.log


def chat_choice(chosen: tuple[str, float], top: list[tuple[str, float]]) -> dict[str, Any]:
    entry = {"token": chosen[0], "logprob": chosen[1], "top_logprobs": [{"token": t, "logprob": lp} for t, lp in top]}
    return {"logprobs": {"content": [entry, {"token": "x", "logprob": 0.0, "top_logprobs": []}]}}


def legacy_choice(chosen: tuple[str, float], top: dict[str, float]) -> dict[str, Any]:
    return {"logprobs": {"tokens": [chosen[0], "."], "token_logprobs": [chosen[1], 0.0], "top_logprobs": [top, {}]}}


@pytest.mark.parametrize(
    ("choice", "want"),
    [
        # chat shape: " 4" and "4" both count for 4; the second position is never read
        (chat_choice(("4", LN(0.5)), [("4", LN(0.5)), (" 4", LN(0.1)), ("3", LN(0.2)), ("The", LN(0.1))]),
         {"4": 0.6, "3": 0.2}),
        # the chosen token is missing from its alternatives (top_logprobs 0, or a server's own list): it joins them
        (chat_choice(("2", LN(0.7)), [("1", LN(0.1))]), {"2": 0.7, "1": 0.1}),
        # legacy shape: {token: logprob}; the chosen token is already listed, so it is not counted twice
        (legacy_choice(("5", LN(0.4)), {"5": LN(0.4), " 1": LN(0.3), "10": LN(0.1)}), {"5": 0.4, "1": 0.3, "10": 0.1}),
        (legacy_choice(("Hi", LN(0.9)), {"Hi": LN(0.9), "2": -math.inf}), {"2": 0.0}),  # -inf: excluded, p = 0
        # alternatives without a score token: an empty distribution (no mass), not "no log-probabilities"
        (chat_choice(("The", LN(0.9)), [("The", LN(0.9)), ("A", LN(0.05))]), {}),
        # junk entries are skipped, not trusted: NaN, booleans, a token that is not a string
        (chat_choice(("3", math.nan), [("3", LN(0.5))]), {"3": 0.5}),
        ({"logprobs": {"content": [{"token": "3", "logprob": True, "top_logprobs": [{"token": 4, "logprob": 0}]}]}},
         {}),
        # no log-probabilities in the reply: None, whatever the reason
        ({"logprobs": None}, None),
        ({}, None),
        ({"logprobs": {"content": []}}, None),
        ({"logprobs": {"content": None, "refusal": None}}, None),
        ({"logprobs": {"top_logprobs": []}}, None),
    ],
)  # fmt: skip
def test_first_position_is_read_from_both_shapes(choice: dict[str, Any], want: dict[str, float] | None) -> None:
    got = score_probs_from(choice)
    assert got == (None if want is None else pytest.approx(want))


def test_score_tokens_outside_the_returned_alternatives_are_missing_mass() -> None:
    """Only the returned top-N is known: mass on other score tokens is unseen, and expected_mass says how much."""
    top = [(f"w{i}", LN(0.03)) for i in range(18)] + [("2", LN(0.3)), ("4", LN(0.1))]  # 20 alternatives
    probs = score_probs_from(chat_choice(("2", LN(0.3)), top))
    assert probs == pytest.approx({"2": 0.3, "4": 0.1})
    value, mass = expected_score(probs, (0.0, 5.0))  # type: ignore[arg-type,misc]
    assert value == pytest.approx((2 * 0.3 + 4 * 0.1) / 0.4) and mass == pytest.approx(0.4)


def first_digit(text: str) -> dict[str, float]:
    """The fake model's first-token distribution: 0.6 on the reply's first digit, 0.25 on the next, 0.1 on a word."""
    d = int(next(c for c in text if c.isdigit()))
    return {str(d): 0.6, "The": 0.1} | ({str(d + 1): 0.25} if d < 5 else {})


def want_expected(text: str) -> tuple[float, float]:
    probs = {k: v for k, v in first_digit(text).items() if k.isdigit()}
    return sum(int(k) * p for k, p in probs.items()) / sum(probs.values()), sum(probs.values())


def send(backend: OpenAIBackend, prompt: str) -> Completion:
    async def once() -> Completion:
        try:
            return await backend.send(Request("0", prompt))
        finally:
            await backend.aclose()

    return asyncio.run(once())


@pytest.mark.parametrize(
    ("chat", "shape", "asked"),
    [
        (True, "legacy", {"logprobs": True, "top_logprobs": TOP_LOGPROBS}),
        (False, "legacy", {"logprobs": TOP_LOGPROBS}),
        (False, "chat", {"logprobs": TOP_LOGPROBS}),  # llama.cpp's server: /v1/completions in the chat shape
    ],
)
def test_openai_backend_asks_for_and_reads_first_token_logprobs(chat: bool, shape: str, asked: dict[str, Any]) -> None:
    with FakeServer(extras=logprobs(first_digit, raw_shape=shape)) as server:
        backend = OpenAIBackend("m", "EMPTY", [server.openai_url], chat=chat, expected=True)
        got = send(backend, "Sentence 1: a. Output:")
        plain = send(OpenAIBackend("m", "EMPTY", [server.openai_url], chat=chat), "Sentence 1: a. Output:")
    sent, plain_sent = server.calls[0].body, server.calls[1].body
    assert {k: sent[k] for k in asked} == asked
    assert not {"logprobs", "top_logprobs"} & plain_sent.keys()  # parsed runs send what they always sent
    assert got.score_probs == pytest.approx({k: v for k, v in first_digit(got.text or "").items() if k.isdigit()})
    assert plain.score_probs is None and plain.text == got.text
    assert backend.describe()["sent"] != OpenAIBackend("m", "k", [server.openai_url], chat=chat).describe()["sent"]


def run(server: FakeServer, tmp: Path, *extra: str, run_id: str = "r") -> tuple[dict[str, Any], list[dict[str, Any]]]:
    args = ["--model", "m", "--base-url", server.openai_url, "--dataset", "stsb", "--limit", "12", "--no-progress"]
    assert main([*args, "--scoring", "expected", *extra, "--results-dir", str(tmp), "--run-id", run_id]) == 0
    folder = tmp / run_id
    samples = [json.loads(x) for x in (folder / "samples.jsonl").read_text().splitlines()]
    return json.loads((folder / "metrics.json").read_text()), samples


@pytest.mark.parametrize("mode", ["--chat", "--no-chat"])
def test_a_run_over_an_openai_compatible_server_gets_expected_scores(mode: str, tmp_path: Path) -> None:
    with FakeServer(extras=logprobs(first_digit)) as server:
        metrics, samples = run(server, tmp_path, mode)
    assert metrics["n_expected"] == 12 and metrics["expected_no_logprobs"] == metrics["expected_missing"] == 0
    for s in samples:
        value, mass = want_expected(s["output"])
        assert s["expected"] == pytest.approx(value) and s["expected_mass"] == pytest.approx(mass)
    assert "spearman_expected" in metrics and "expected_note" not in metrics


def test_a_server_that_returns_no_logprobs_is_told_apart_from_no_mass_on_the_scores(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeServer() as server:  # ignores `logprobs`, as transformers serve does
        none, samples = run(server, tmp_path, run_id="none")
    assert none["expected_no_logprobs"] == 12 and none["n_expected"] == none["expected_missing"] == 0
    assert "12 of 12 replies held no log-probabilities" in none["expected_note"]
    assert "spearman_expected" not in none and all("expected_mass" not in s for s in samples)
    assert "12 of 12 replies held no log-probabilities" in capsys.readouterr().out
    with FakeServer(extras=logprobs(lambda text: {"The": 0.7, "A": 0.2})) as server:
        elsewhere, samples = run(server, tmp_path, run_id="elsewhere")
    assert elsewhere["expected_missing"] == 12 and elsewhere["expected_no_logprobs"] == 0
    assert elsewhere["expected_mass_mean"] == 0.0 and all(s["expected_mass"] == 0.0 for s in samples)
    assert "no valid score token among the returned alternatives" in elsewhere["expected_note"]


def test_batch_bodies_carry_the_logprob_fields_and_give_the_same_expected_scores(tmp_path: Path) -> None:
    with FakeBatchServer(extras=logprobs(first_digit)) as server:
        _, one = run(server, tmp_path / "one", "--model", "gpt-4o-mini")
        _, batch = run(server, tmp_path / "batch", "--model", "gpt-4o-mini", "--batch", "--batch-poll", "0.05")
    (submitted,) = server.batches.values()
    assert all(body["logprobs"] is True and body["top_logprobs"] == TOP_LOGPROBS for _, body in submitted.items)
    assert [s["expected"] for s in batch] == [s["expected"] for s in one] and one[0]["expected"] is not None


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--model", "claude-sonnet-4-6"], "the anthropic backend does not give"),
        (["--model", "o3-mini", "--dry-run"], "reasoning models ('o3-mini') return no log-probabilities"),
    ],
)
def test_expected_scoring_is_refused_where_there_are_no_logprobs(
    args: list[str], said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    rc = main([*args, "--dataset", "stsb", "--scoring", "expected", "--results-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and said in err
    assert list(tmp_path.iterdir()) == []
