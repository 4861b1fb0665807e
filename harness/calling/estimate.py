"""`--dry-run`: what a run would send and cost, with every prompt rendered; no model is called.

Each variant (harness/variants/) names its calling steps; this module counts and prices them."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.calling.backends.choose import thinking
from harness.calling.pricing import Price, prompt_tokens
from harness.config.settings import RunConfig
from harness.types import Request


@dataclass(frozen=True)
class Step:
    """One calling step of a run: its name in the estimate ("answers", "scoring"), the settings of the model
    it calls, its rendered requests and that model's price."""

    name: str
    config: RunConfig
    requests: Sequence[Request]
    price: Price | None


def dry_run_estimate(steps: Sequence[Step], price: Price | None, notes: Mapping[str, Any] = {}) -> dict[str, Any]:
    """Requests, prompt tokens and the most the run could cost (every answer at its full output budget).
    `notes`: what a variant calls but cannot count yet (qa-embed's embeddings); `price`: the run's model's."""
    estimate: dict[str, Any] = {"dry_run": True, "requests": 0, "prompt_tokens": 0, "max_output_tokens": 0}
    costs, batch_costs = [], []
    for step in steps:
        cfg, requests, step_price = step.config, step.requests, step.price
        tokens, method = prompt_tokens(cfg, [r.prompt for r in requests])
        budget = thinking(cfg).max_tokens  # backends' output_budget, with the step's reasoning settings read once
        output = sum(budget(r.max_tokens) for r in requests)
        cost = _up(step_price.cost(tokens, output)) if step_price else None
        batch_cost = _up(step_price.batch().cost(tokens, output)) if step_price else None  # --batch
        estimate[step.name] = {
            "model": cfg.model,
            "requests": len(requests),
            "prompt_tokens": tokens,
            "max_cost_usd": cost,
        }
        estimate[step.name]["max_cost_batch_usd"] = batch_cost
        batch_costs.append(batch_cost)
        estimate["requests"] += len(requests)
        estimate["prompt_tokens"] += tokens
        estimate["max_output_tokens"] += output
        estimate["token_count"] = method
        costs.append(cost)
    estimate |= notes
    estimate["max_cost_usd"] = None if None in costs else round(sum(c for c in costs if c is not None), 4)
    estimate["max_cost_batch_usd"] = None if None in batch_costs else round(sum(c or 0 for c in batch_costs), 4)
    estimate["price"] = dataclasses.asdict(price) if price else None
    return estimate


def _up(cost: float) -> float:
    """Rounded up to 1/100 cent, so that --max-cost set to this figure sends every request (calling/budget.py)."""
    return math.ceil(cost * 1e4 - 1e-9) / 1e4


def dry_run_cost(m: Mapping[str, Any]) -> str:
    """What a dry run's requests cost at most: one by one and with --batch (where the provider has a batch price)."""
    cost = f"${m['max_cost_usd']:.4f}" if m.get("max_cost_usd") is not None else "unknown (no price for model)"
    if m.get("max_cost_batch_usd") is not None:
        cost += f" one by one, ${m['max_cost_batch_usd']:.4f} with --batch"
    return cost


def dry_run_total(estimates: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Several dry runs' estimates (a sweep's cells, a recipe's runs) summed; a cost is None where a run has no
    price (its tokens are still counted)."""
    counts = ("requests", "prompt_tokens", "max_output_tokens")
    total: dict[str, Any] = {k: sum(m[k] for m in estimates) for k in counts}
    for k in ("max_cost_usd", "max_cost_batch_usd"):
        costs = [m.get(k) for m in estimates]
        total[k] = None if None in costs else round(sum(costs), 4)  # type: ignore[arg-type]
    return total
