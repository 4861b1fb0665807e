"""--max-cost: a request starts only if what it could cost still fits under the limit.

Each request reserves its prompt tokens, counted exactly as --dry-run counts them (harness/prompting/tokens.py:
tiktoken for OpenAI models, a high-side estimate otherwise, plus the chat message's wrapping), and its full
output budget (the most the provider can bill). When the answer arrives the reservation is replaced by
what the provider reports. So a run given its own dry-run estimate as --max-cost sends every request,
and a lower limit stops near it, never past it.
"""

from __future__ import annotations

from collections.abc import Callable

from harness.calling.pricing import Price
from harness.types import Request, Usage

# Float sums of the same prices in another order differ in the last bits: a limit equal to the dry run's
# estimate must not refuse the last request over 1e-16 dollars.
_SLACK_USD = 1e-9


class Budget:
    def __init__(self, max_cost: float, price: Price, count_prompt: Callable[[str], int]) -> None:
        self.max_cost, self.price, self.count_prompt = max_cost, price, count_prompt
        self.spent = 0.0
        self.reserved = 0.0

    def worst_case(self, request: Request, output_budget: int) -> float:
        """The most this request can cost: its counted prompt and every output token it may be billed."""
        return self.price.cost(self.count_prompt(request.prompt), output_budget)

    def reserve(self, amount: float) -> bool:
        if self.spent + self.reserved + amount > self.max_cost + _SLACK_USD:
            return False
        self.reserved += amount
        return True

    def settle(self, reserved: float, usage: Usage | None) -> None:
        """Replace a reservation by what the answer cost (nothing for a request that got no answer); an answer
        whose reply reported no usable token counts costs what was reserved for it, the most it could."""
        self.reserved -= reserved
        if usage is not None:
            self.spent += self.price.cost_of(usage) if usage.reported else reserved
