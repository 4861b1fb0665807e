"""A run's price (`price_of`) and what its answers cost (`usage`), on real Completion objects."""

from __future__ import annotations

import dataclasses

import pytest

from harness.calling.backends.offline import OverlapScorer
from harness.calling.backends.openai import OpenAIBackend
from harness.calling.pricing import Price, price_for, price_of, usage
from harness.config.settings import ApiOptions, RunConfig
from harness.types import Completion, HarnessError, Usage
from harness.variants.validate import validate_run

PRICE = Price("test-model", 1.0, 2.0, "test table")  # $1 / $2 per million input / output tokens
ANSWERS = {
    "a": Completion("a", "4", usage=Usage(1000, 10)),
    "b": Completion("b", "3", usage=Usage(2000, 20)),
    "c": Completion("c", None, error="HTTP 500"),  # a failed request: no tokens, not an answer
}


def test_usage_sums_tokens_and_prices_them_at_the_list_price() -> None:
    record = usage(ANSWERS, PRICE)
    assert (record["input_tokens"], record["output_tokens"]) == (3000, 30)
    assert record["cost_usd"] == pytest.approx((3000 * 1.0 + 30 * 2.0) / 1e6)
    assert record["price"]["entry"] == "test-model"
    assert "paid" not in record and "list_cost_usd" not in record  # nothing came through a batch


def test_usage_prices_batch_answers_at_the_batch_price() -> None:
    record = usage(ANSWERS, PRICE, paid_by_batch={"b"})
    one_by_one = (1000 * 1.0 + 10 * 2.0) / 1e6
    batch = (2000 * 0.5 + 20 * 1.0) / 1e6  # half the list price (pricing.BATCH_SHARE)
    assert record["cost_usd"] == pytest.approx(one_by_one + batch)
    assert record["paid"] == {"batch": 1, "one_by_one": 1}  # the failed request counts as neither
    assert record["list_cost_usd"] == pytest.approx((3000 * 1.0 + 30 * 2.0) / 1e6)


def test_usage_without_a_price_says_so() -> None:
    record = usage(ANSWERS, None)
    assert record["cost_usd"] is None and record["price"].startswith("unknown")
    assert record["input_tokens"] == 3000


def test_local_backends_have_no_price_and_api_backends_the_tables() -> None:
    config = RunConfig(model="gpt-4o-mini")
    assert price_of(config, OverlapScorer()) is None
    remote = OpenAIBackend("gpt-4o-mini", "sk-test-0123456789", ["http://127.0.0.1:9/v1"])
    assert price_of(config, remote) == price_for("gpt-4o-mini", None) is not None
    assert price_of(config, None) == price_for("gpt-4o-mini", None)  # a dry run builds no backend


def test_max_cost_needs_a_price_before_any_work() -> None:
    """Checked once, with the run's settings (dry runs too); price_of only looks the price up."""
    unknown = RunConfig(model="my-own-model", api=ApiOptions(max_cost=1.0, base_urls=("http://127.0.0.1:9/v1",)))
    remote = OpenAIBackend("my-own-model", "sk-test-0123456789", ["http://127.0.0.1:9/v1"])
    for config in (unknown, dataclasses.replace(unknown, dry_run=True)):
        with pytest.raises(HarnessError, match="--max-cost needs a price for 'my-own-model'"):
            validate_run(config)
    assert price_of(unknown, remote) is None
    assert price_of(RunConfig(model="my-own-model"), remote) is None  # no limit: an unknown price is reported
    validate_run(dataclasses.replace(unknown, model="gpt-4o-mini"))  # a model the table prices passes
