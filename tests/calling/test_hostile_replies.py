"""Issue 30, items 1 and 2: a 200 reply that came back is never thrown away, and what it says is only believed
where it can be true. Each hostile reply is served twice by tests/fake_server.py (the real openai SDK's bytes
through our aiohttp transport): the run must finish, keep every answer, and its rerun must ask for none again."""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from scipy import stats

from harness.calling.limiter import PACE, RESET_CAP, RETRY_AFTER_CAP, Limiter
from harness.calling.limits import duration, rate_limit
from harness.cli.main import main
from harness.scoring.expected import DROPPED, collect_score_probs
from harness.types import RateLimit
from tests.fake_server import FakeServer

N = 12  # rows of STS-B's validation split per run


class Hostile(FakeServer):
    """FakeServer whose 200 replies carry extra headers, and whose body `mangle` may rewrite (as text)."""

    def __init__(self, headers: dict[str, str] | None = None, mangle: Callable[[str], str] | None = None, **kw: Any):
        super().__init__(**kw)
        self.hostile_headers, self.mangle = headers or {}, mangle

    def _reply(self, prompt: str, reply: dict[str, Any]) -> web.Response:
        response = super()._reply(prompt, reply)
        response.headers.update(self.hostile_headers)
        if self.mangle is not None:
            response.text = self.mangle(response.text or "")
        return response


def strict_loads(text: str) -> Any:
    """json.loads that refuses NaN and Infinity, as JSON itself (and jq, and JavaScript) does."""

    def refuse(literal: str) -> None:
        raise ValueError(f"{literal} is not JSON")

    return json.loads(text, parse_constant=refuse)


def run_twice(server: FakeServer, tmp: Path, *extra: str, wait: float = 60.0) -> tuple[dict, list[dict], int]:
    """Run, then rerun the same command on the same cache: (metrics, samples of the first run, requests the
    server saw during the rerun). A run that hangs fails the test instead of hanging it."""
    args = ["--model", "m", "--base-url", server.openai_url, "--dataset", "stsb", "--limit", str(N), "--no-progress"]
    args += ["--cache", str(tmp / "cache.sqlite"), "--concurrency", "1", *extra]
    codes: list[int] = []
    seen: list[int] = []  # requests the server saw during each run
    for run_id in ("first", "rerun"):
        before = len(server.calls)
        thread = threading.Thread(
            target=lambda r=run_id: codes.append(main([*args, "--results-dir", str(tmp), "--run-id", r])), daemon=True
        )
        thread.start()
        thread.join(wait)
        assert not thread.is_alive(), f"the {run_id} run hung (no end within {wait:g}s)"
        seen.append(len(server.calls) - before)
    assert codes == [0, 0] and seen[0] == N
    folder = tmp / "first"
    metrics = strict_loads((folder / "metrics.json").read_text())
    samples = [strict_loads(line) for line in (folder / "samples.jsonl").read_text().splitlines()]
    return metrics, samples, seen[1]


# --- item 1: the limiter under rate-limit headers that are no numbers -------------------------------------------


def test_a_reset_of_inf_neither_loses_the_reply_nor_hangs_a_run_of_one_slot(tmp_path: Path) -> None:
    spent = {"x-ratelimit-limit-requests": "100", "x-ratelimit-remaining-requests": "0",
             "x-ratelimit-reset-requests": "inf"}  # fmt: skip
    with Hostile(headers=spent) as server:
        metrics, samples, rerun = run_twice(server, tmp_path)
    assert [s["error"] for s in samples] == [None] * N and metrics["errors"] == 0
    assert rerun == 0  # every answer was cached: the rerun bought none again


@pytest.mark.parametrize("reset", ["inf", "-inf", "nan", "1e400", "Infinity"])
def test_a_reset_that_is_no_number_is_unreadable(reset: str) -> None:
    assert duration(reset) is None
    limits = rate_limit({"x-ratelimit-limit-requests": "100", "x-ratelimit-reset-requests": reset})
    assert limits is not None and limits.requests_limit == 100 and limits.requests_reset is None


def test_pacing_learned_from_headers_is_capped_as_retry_after_is() -> None:
    """A reset of 10^9 s, or in the year 9999 (Anthropic's RFC 3339 times), is read as at most RESET_CAP."""
    year_9999 = rate_limit({"anthropic-ratelimit-requests-limit": "1000", "anthropic-ratelimit-requests-remaining":
                            "0", "anthropic-ratelimit-requests-reset": "9999-12-31T23:59:59Z"}, now=0.0)  # fmt: skip
    assert year_9999 is not None and year_9999.requests_reset == pytest.approx(253402300799.0)
    for limits in (RateLimit(requests_limit=1000, requests_remaining=0, requests_reset=1e9), year_9999):
        lim = Limiter(4, clock=lambda: 100.0)
        lim.in_flight = 1
        lim.release(100.0, ok=True, limits=limits)
        assert lim.in_flight == 0  # the slot came back
        assert lim.requests is not None and lim.requests.rate == pytest.approx(PACE * 1000 / RESET_CAP)
        assert lim.paused_until - 100.0 == pytest.approx(RESET_CAP / (PACE * 1000))
        assert lim.paused_until - 100.0 <= RETRY_AFTER_CAP


def test_a_rate_limit_made_elsewhere_with_an_infinite_reset_still_frees_the_slot() -> None:
    lim = Limiter(1)
    lim.in_flight = 1
    lim.release(0.0, ok=True, limits=RateLimit(requests_limit=10, requests_remaining=0, requests_reset=math.inf))
    assert lim.in_flight == 0 and lim.requests is None


# --- items 1 and 2: log-probabilities -----------------------------------------------------------------------------


def first_logprobs(value: str) -> Callable[[str, dict[str, Any], dict[str, Any]], dict[str, Any]]:
    """Chat replies whose first position gives the answer's token the log-probability `value` (JSON text: 800,
    Infinity, NaN ...) and " 3" a plausible one."""

    def add(endpoint: str, request: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
        token = reply["choices"][0]["message"]["content"]
        top = [{"token": token, "logprob": f"@{value}@"}, {"token": " 3", "logprob": math.log(0.25)}]
        reply["choices"][0]["logprobs"] = {"content": [{"token": token, "logprob": f"@{value}@", "top_logprobs": top}]}
        return reply

    return add


def unquote(text: str) -> str:  # the fake server writes strict JSON; these replies carry literals it cannot write
    return text.replace('"@', "").replace('@"', "")


@pytest.mark.parametrize(("value", "dropped"), [("800", 1), ("Infinity", 1), ("NaN", 1), ("0.7", 1)])
def test_impossible_log_probabilities_are_dropped_counted_and_never_reach_the_metrics(
    tmp_path: Path, value: str, dropped: int
) -> None:
    with Hostile(answer=lambda p: "4", extras=first_logprobs(value), mangle=unquote) as server:
        metrics, samples, rerun = run_twice(server, tmp_path, "--scoring", "expected", "--chat")
    assert rerun == 0 and metrics["errors"] == 0
    # Only " 3" is left: every expected score is 3, its mass 0.25, and the 4 the reply claimed is dropped.
    assert [(s["expected"], s["expected_mass"], s["expected_dropped"]) for s in samples] == [(3.0, 0.25, dropped)] * N
    assert metrics["expected_dropped"] == N and f"{N} replies held score-token values" in metrics["expected_note"]
    assert metrics["spearman_expected"] is None  # constant predictions: undefined, written as null, never NaN


def test_log_probabilities_are_read_only_where_they_can_be_ones() -> None:
    got = collect_score_probs([("4", 0.00005), ("3", -math.inf), ("2", 0.5), ("1", math.nan), ("x", 9.0)], True)
    assert got == {"4": pytest.approx(1.0), "3": 0.0, DROPPED: 2.0}
    # Probabilities that sum past 1 are no distribution: all dropped (a mass of 10 came from positive ones).
    assert collect_score_probs([(" 4", math.log(0.8)), ("4", math.log(0.7))], True) == {DROPPED: 2.0}
    assert collect_score_probs([("2", 1.5), ("3", -0.1), ("4", 0.4)]) == {"4": 0.4, DROPPED: 2.0}


# --- item 1: a reply that cannot be read is kept, with a reason -------------------------------------------------


def test_a_reply_nested_too_deep_to_decode_is_kept_as_malformed_not_bought_again(tmp_path: Path) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    with Hostile(mangle=lambda text: text[:-1] + f', "x": {deep}}}') as server:
        metrics, samples, rerun = run_twice(server, tmp_path)
    assert rerun == 0
    assert [(s["reason"], s["valid"], s["error"]) for s in samples] == [("malformed", False, None)] * N
    assert metrics["reasons"] == {"malformed": N}


# --- item 2: a number too large for a float -----------------------------------------------------------------------


def test_a_first_number_of_309_digits_is_out_of_range_and_pearson_stays_a_number(tmp_path: Path) -> None:
    answers = {}

    def answer(prompt: str) -> str:
        answers[prompt] = "9" * 309 if len(answers) == 0 else str(1 + len(answers) % 5)
        return answers[prompt]

    with Hostile(answer=answer) as server:
        metrics, samples, rerun = run_twice(server, tmp_path)
    assert rerun == 0
    huge = [s for s in samples if s["output"] == "9" * 309]
    assert len(huge) == 1 and huge[0]["reason"] == "out-of-range" and huge[0]["valid"] is False
    assert huge[0]["parsed"] is None and 0 <= huge[0]["prediction"] <= 5  # the paper's fallback draw
    pred = [s["prediction"] for s in samples]
    gold = [s["label"] for s in samples]
    assert metrics["pearson"] == pytest.approx(100 * stats.pearsonr(pred, gold).statistic)  # in percent
