"""`--dry-run`: what a run would send and cost, with every prompt rendered; no model is called."""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any

from harness.calling.calls import output_budget, price_of, prompt_tokens
from harness.calling.pricing import Price
from harness.config.settings import RunConfig
from harness.datasets.load import pair_ids
from harness.types import Scored
from harness.variants.qa import answer_config, score_requests

if TYPE_CHECKING:
    from harness.runner import Prepared

PLACEHOLDER = "<answer>"


def placeholder_prompts(prep: Prepared, max_tokens: int = 20) -> Prepared:
    """Figure 9 prompts with "<answer>" in place of answers not yet asked for (dry run: token counts)."""
    placeholders = dict.fromkeys(prep.answer_keys, PLACEHOLDER)
    requests, _ = score_requests(prep.queries, prep.shots, placeholders, prep.renderer, max_tokens)
    return dataclasses.replace(prep, requests=requests)


def dry_run_samples(config: RunConfig, prep: Prepared) -> list[Scored]:
    """qa-embed has no scoring prompt: one line per query naming the two answers whose embeddings it compares."""
    pairs = pair_ids(prep.dataset.examples)
    return [
        Scored(
            q.id,
            f"{PLACEHOLDER}\n{PLACEHOLDER}",
            tuple(s.id for s in shots),
            None,
            None,
            False,
            None,
            q.label,
            None,
            pairs.get(q.id),
        )
        for q, shots in zip(prep.queries, prep.shots, strict=True)
    ]


def dry_run_estimate(config: RunConfig, prep: Prepared, price: Price | None) -> dict[str, Any]:
    """Requests, prompt tokens and the most the run could cost (every answer at its full output budget)."""
    steps = []
    if config.variant != "sentences":
        acfg = answer_config(config)
        steps.append(("answers", acfg, prep.answer_requests, price_of(acfg, None)))
    if config.variant == "qa":
        steps.append(("scoring", config, placeholder_prompts(prep, config.max_tokens).requests, price))
    elif config.variant == "sentences":
        steps.append(("scoring", config, prep.requests, price))
    estimate: dict[str, Any] = {"dry_run": True, "requests": 0, "prompt_tokens": 0, "max_output_tokens": 0}
    costs, batch_costs = [], []
    for step, cfg, requests, step_price in steps:
        tokens, method = prompt_tokens(cfg, [r.prompt for r in requests])
        output = sum(output_budget(cfg, r) for r in requests)
        cost = _up(step_price.cost(tokens, output)) if step_price else None
        batch_cost = _up(step_price.batch().cost(tokens, output)) if step_price else None  # --batch
        estimate[step] = {"model": cfg.model, "requests": len(requests), "prompt_tokens": tokens, "max_cost_usd": cost}
        estimate[step]["max_cost_batch_usd"] = batch_cost
        batch_costs.append(batch_cost)
        estimate["requests"] += len(requests)
        estimate["prompt_tokens"] += tokens
        estimate["max_output_tokens"] += output
        estimate["token_count"] = method
        costs.append(cost)
    if config.variant == "qa-embed":
        estimate["embeddings"] = {"model": config.model, "requests": f"at most {2 * len(prep.queries)}"}
    estimate["max_cost_usd"] = None if None in costs else round(sum(c for c in costs if c is not None), 4)
    estimate["max_cost_batch_usd"] = None if None in batch_costs else round(sum(c or 0 for c in batch_costs), 4)
    estimate["price"] = dataclasses.asdict(price) if price else None
    return estimate


def _up(cost: float) -> float:
    """Rounded up to 1/100 cent, so that --max-cost set to this figure sends every request (calling/budget.py)."""
    return math.ceil(cost * 1e4 - 1e-9) / 1e4
