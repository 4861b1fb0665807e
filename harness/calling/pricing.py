"""Token prices (a table in the package, harness/data/prices.json, overridable by a user JSON file), a run's
price, the prompt-token count behind --dry-run and --max-cost, and what a run's answers cost (`usage`)."""

from __future__ import annotations

import dataclasses
import difflib
import json
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.calling.backends.base import Backend, RemoteBackend
from harness.config.settings import RunConfig
from harness.prompting.tokens import CHAT_OVERHEAD_TOKENS, counter
from harness.types import Completion, HarnessError, Usage

PRICES_FILE = Path(__file__).parents[1] / "data" / "prices.json"
# OpenAI's Batch API and Anthropic's Message Batches both bill half the list price; an entry may give its own
# "batch_input" / "batch_output" instead.
BATCH_SHARE = 0.5


@dataclass(frozen=True)
class Price:
    """US dollars per million input and output tokens for one model, and where that figure came from."""

    entry: str  # the table entry that matched
    input_per_mtok: float
    output_per_mtok: float
    source: str  # "package table (as of ...)" or the user's file
    batch_input_per_mtok: float | None = None  # None: BATCH_SHARE of the list price
    batch_output_per_mtok: float | None = None

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.input_per_mtok + output_tokens * self.output_per_mtok) / 1e6

    def cost_of(self, usage: Usage) -> float:
        return self.cost(usage.input_tokens, usage.output_tokens)

    def batch(self) -> Price:
        """The price of the same tokens through the provider's batch endpoint."""
        given_in, given_out = self.batch_input_per_mtok, self.batch_output_per_mtok
        explicit = given_in is not None and given_out is not None
        return Price(
            self.entry + " (batch)",
            given_in if given_in is not None else self.input_per_mtok * BATCH_SHARE,
            given_out if given_out is not None else self.output_per_mtok * BATCH_SHARE,
            self.source + ("" if explicit else f"; batch: {BATCH_SHARE:.0%} of list"),
        )


def _read(path: Path) -> dict[str, Any]:
    try:
        table = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise HarnessError(f"cannot read price table {path}: {e}") from None
    models = table.get("models") if isinstance(table, dict) else None
    if not isinstance(models, dict):
        raise HarnessError(f'price table {path}: expected {{"models": {{"NAME": {{"input": X, "output": Y}}}}}}')
    for name, entry in models.items():
        ok = isinstance(entry, dict) and all(isinstance(entry.get(k), int | float) for k in ("input", "output"))
        if not ok:
            raise HarnessError(f"price table {path}: entry {name!r} needs numeric 'input' and 'output' ($ per 1M)")
        if any(k in entry and not isinstance(entry[k], int | float) for k in ("batch_input", "batch_output")):
            raise HarnessError(f"price table {path}: entry {name!r}: 'batch_input' and 'batch_output' must be numbers")
    return table


# What a provider appends to a model's name for one of its snapshots: dates (gpt-4o-2024-08-06,
# claude-3-5-sonnet-20241022), short dates (gpt-4-0613) and aliases (-latest, -preview).
_SNAPSHOT = re.compile(r"(-(\d+|latest|preview))+")
# How close a name must be to a priced one to be taken for its typo (gpt-4o-mnii 0.91, o3-mni 0.92,
# claude-sonnet-4.6 0.94) while other models' names pass (gpt-5.1 and gpt-4.5 are 0.86 from gpt-4.1).
TYPO_CUTOFF = 0.88


def _match(model: str, names: list[str]) -> str | None:
    """The exact entry, else the longest entry the name extends by a snapshot suffix (gpt-4o-2024-08-06 ->
    gpt-4o); not one it extends by other words (gpt-4o-mnii is no gpt-4o, gpt-4o-audio-preview costs more)."""
    if model in names:
        return model
    candidates = [n for n in names if model.startswith(n + "-") and _SNAPSHOT.fullmatch(model[len(n) :])]
    return max(candidates, key=len) if candidates else None


def check_model_name(model: str, user_file: Path | None = None) -> None:
    """A hosted API's model name: one that is not in the price table (nor a snapshot of an entry) but within a
    typo of an entry is refused with that entry, before it is sent or priced as something else. Names far
    from every entry (a fine-tune, a newer model) pass, unpriced, as before."""
    names = [n for path in ([user_file] if user_file else []) + [PRICES_FILE] for n in _read(path)["models"]]
    if _match(model, names) is not None:
        return
    close = difflib.get_close_matches(model, names, n=1, cutoff=TYPO_CUTOFF)
    if close:
        raise HarnessError(
            f"unknown model {model!r}: did you mean {close[0]!r}? (names are checked against the price table, "
            "harness/data/prices.json; a model missing from it: pass --prices FILE with its price)"
        )


def price_for(model: str, user_file: Path | None = None) -> Price | None:
    """The price of `model`: the user's file first (if given), then the package table; None if unknown."""
    sources = [(user_file, f"user file {user_file}")] if user_file is not None else []
    sources.append((PRICES_FILE, "package table"))
    for path, label in sources:
        assert path is not None
        table = _read(path)
        entry = _match(model, list(table["models"]))
        if entry is not None:
            p = table["models"][entry]
            as_of = f" (as of {table['_as_of']})" if "_as_of" in table else ""
            batch = [float(p[k]) if k in p else None for k in ("batch_input", "batch_output")]
            return Price(entry, float(p["input"]), float(p["output"]), label + as_of, batch[0], batch[1])
    return None


def price_of(config: RunConfig, backend: Backend | None) -> Price | None:
    """The model's price for API backends (None when unknown; --max-cost's need of one is checked with the run's
    settings, harness/calling/validate.py). `backend` None: a dry run, which builds none and prices as if remote."""
    if backend is not None and not isinstance(backend, RemoteBackend):
        return None
    return price_for(config.model, config.api.prices)


def usage(
    completions: Mapping[str, Completion], price: Price | None, paid_by_batch: Collection[str] = frozenset()
) -> dict[str, Any]:
    """Tokens of every answer the results use (cached ones included) and what they cost: the batch price for
    answers a batch paid for (`DispatchStats.paid_by_batch`), the list price for the rest."""
    parts = {"batch": [0, 0, 0], "one_by_one": [0, 0, 0]}  # answers, input tokens, output tokens
    for rid, c in completions.items():
        part = parts["batch" if rid in paid_by_batch else "one_by_one"]
        part[0] += c.error is None
        part[1] += c.usage.input_tokens
        part[2] += c.usage.output_tokens
    tokens_in = parts["batch"][1] + parts["one_by_one"][1]
    tokens_out = parts["batch"][2] + parts["one_by_one"][2]
    cost = None
    if price is not None:
        cost = round(price.cost(*parts["one_by_one"][1:]) + price.batch().cost(*parts["batch"][1:]), 6)
    record = {
        "input_tokens": tokens_in,
        "output_tokens": tokens_out,
        "cost_usd": cost,
        "price": dataclasses.asdict(price) if price else "unknown: no entry in the price table (--prices FILE)",
    }
    if paid_by_batch:  # which price each answer was paid at (--batch: the provider's batch endpoint)
        record["paid"] = {"batch": parts["batch"][0], "one_by_one": parts["one_by_one"][0]}
        record["list_cost_usd"] = round(price.cost(tokens_in, tokens_out), 6) if price else None
    return record


def prompt_counter(config: RunConfig) -> tuple[Callable[[str], int], str]:
    """(prompt tokens of one request, how counted): the one count behind --dry-run and --max-cost. API
    requests in chat form add the message's wrapping."""
    from harness.calling.backends import BACKENDS
    from harness.calling.backends.choose import backend_name, chat_mode

    try:
        d = BACKENDS.get(backend_name(config))
    except HarnessError:
        d = None
    api = d is not None and d.remote
    return counter(config.model, CHAT_OVERHEAD_TOKENS if api and chat_mode(config) else 0)


def prompt_tokens(config: RunConfig, texts: Sequence[str]) -> tuple[int, str]:
    """(total prompt tokens, how counted), as `prompt_counter` counts each request."""
    count, method = prompt_counter(config)
    return sum(count(t) for t in texts), method
