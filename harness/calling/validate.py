"""The calling step's checks of a run's settings, made without building a backend (no key, no engine, nothing
sent): each model's backend can be reached and honours the options given, and --max-cost has a price.

What only sending needs (an API key in the environment, an installed engine) is checked when the backend is
built, so a dry run can price a run on a machine that will not send it. The order of all checks is
harness/variants/validate.py's."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from harness.calling.backends import BACKENDS, Description
from harness.calling.backends.base import env_base_url
from harness.calling.backends.choose import described
from harness.calling.backends.openai_names import default_chat, is_reasoning_model
from harness.calling.pricing import check_model_name, price_for
from harness.config.paper import truncation
from harness.config.settings import LocalOptions, RunConfig
from harness.scoring.reasoning import parse_tags
from harness.types import HarnessError

LOCAL_PATH = ("/", "./", "../", "~")  # a --model that names a directory rather than a hub id
# A hub id as huggingface_hub's validate_repo_id accepts it: a name, or namespace/name, of word characters,
# '-' and '.'; anything else that is not a directory fails in from_pretrained, so it fails here, dry runs too.
HUB_ID = re.compile(r"(?:[\w.-]+/)?[\w.-]{1,96}")
ANTHROPIC_MIN_THINKING = 1024  # the API's smallest thinking.budget_tokens


def check_think_tags(config: RunConfig) -> None:
    """--think-tags: format names or 'OPEN CLOSE' pairs (harness/scoring/reasoning.py)."""
    try:
        parse_tags(config.think_tags)
    except ValueError as e:
        raise HarnessError(f"--think-tags: {e}") from None


def check_model(config: RunConfig, model: str, name: str, generates: bool) -> None:
    """One model of the run (the scorer, or the qa variants' answer model) on the backend `name`.
    `generates`: it writes text from a prompt (the scorer of qa-embed embeds instead)."""
    d = described(name)
    local_path = d.kind in ("engine", "embedder") and model.startswith(LOCAL_PATH)
    if local_path and not Path(model).expanduser().is_dir():
        raise HarnessError(f"no model directory at {model} (pass a local directory or a hub id)")
    if d.kind in ("engine", "embedder") and not HUB_ID.fullmatch(model) and not Path(model).expanduser().is_dir():
        raise HarnessError(f"no model directory at {model}, and it is no hub id (NAME or NAMESPACE/NAME)")
    if d.kind in ("engine", "embedder"):
        check_local_options(config, name, d)
    if d.remote and config.api.max_cost is not None and price_for(model, config.api.prices) is None:
        raise HarnessError(f"--max-cost needs a price for {model!r}: none in the package table; pass --prices FILE")
    if model == config.model and truncation(config.truncate_input, model) is not None and not d.truncates:
        which = " and ".join(n for n, b in BACKENDS.items() if b.truncates)
        raise HarnessError(f"--truncate-input: only the {which} backend truncates prompts ({model} runs on {name})")
    if d.remote and not config.api.base_urls:  # a --base-url server's names are its own
        check_model_name(model, config.api.prices)
        env_base_url(d.url_env)  # OPENAI_BASE_URL & co. are checked as --base-url is, dry runs too
    if generates and d.kind != "baseline":  # baselines read the prompt as text: no template, no stop sequences
        check_decoding(config, name, d)
        check_reasoning(config, model, name)


def check_local_options(config: RunConfig, name: str, d: Description) -> None:
    """A local option the backend does not use (--data-parallel on hf) is refused, never silently ignored."""
    defaults = LocalOptions()
    for f in dataclasses.fields(LocalOptions):
        value = getattr(config.local, f.name)
        if f.name not in d.local and value != getattr(defaults, f.name):
            users = [n for n, b in BACKENDS.items() if f.name in b.local]
            flag = "--" + f.name.replace("_", "-")
            verb = "does" if len(users) == 1 else "do"
            only = f"only {' and '.join(users)} {verb}"
            raise HarnessError(f"{flag} {value}: the {name} backend does not use it ({only})")


def check_reasoning(config: RunConfig, model: str, name: str) -> None:
    """Reasoning options the model cannot take are refused rather than sent (and rejected) or dropped."""
    api = config.api
    hosted = described(name).thinking == "openai-names" and default_chat(model, api.base_urls)  # thinking.py
    if hosted and is_reasoning_model(model) and api.reasoning is False:
        raise HarnessError(
            f"--reasoning no: {model} is one of OpenAI's reasoning models, which always reason and reject the "
            "max_tokens and temperature a plain request sends; leave --reasoning out (docs/reasoning.md)"
        )
    reasons = is_reasoning_model(model) if api.reasoning is None else api.reasoning
    if api.reasoning_effort is not None and not (hosted and reasons):
        raise HarnessError(
            f"--reasoning-effort {api.reasoning_effort}: only OpenAI's reasoning models (o1, o3, o4-mini, gpt-5 ...) "
            f"take reasoning_effort; {model} on the {name} backend would not be sent it"
        )


def check_decoding(config: RunConfig, name: str, d: Description) -> None:
    """--chat/--no-chat and --stop on a backend that generates text."""
    if config.chat is False and (d.chat == "only" or (d.chat == "openai-names" and not config.api.base_urls)):
        raise HarnessError(f"--no-chat: {name} models are chat-only (raw text goes to OpenAI-compatible servers)")
    if d.thinking == "when-asked" and config.api.reasoning:  # Claude's extended thinking (README "Reasoning models")
        if config.api.anthropic_greedy:
            raise HarnessError("--reasoning yes: Claude's extended thinking cannot be combined with --anthropic-greedy")
        if config.api.reasoning_tokens < ANTHROPIC_MIN_THINKING:
            raise HarnessError(
                f"--reasoning-tokens: Anthropic's thinking budget is at least {ANTHROPIC_MIN_THINKING}, "
                f"got {config.api.reasoning_tokens}"
            )
    if config.stop and not d.stop:
        sending = ", ".join(n for n, b in BACKENDS.items() if b.stop)
        raise HarnessError(f"--stop: the {name} backend does not send stop sequences (only {sending} do)")
    check_temperature(config, name, d)


def check_temperature(config: RunConfig, name: str, d: Description) -> None:
    """--temperature where it would not be sent as asked: refused, never dropped (harness/scoring/repeats.py)."""
    if config.temperature == 0:
        return
    if not d.samples:
        raise HarnessError(f"--temperature {config.temperature:g}: the {name} backend decodes greedily only")
    if d.thinking == "when-asked" and not config.api.anthropic_greedy:  # Anthropic (calling/backends/anthropic.py)
        raise HarnessError(
            f"--temperature {config.temperature:g}: Anthropic's current API version takes no temperature (its "
            "models sample at their default); --anthropic-greedy sends it on API version 2023-06-01"
        )
    reasons = is_reasoning_model(config.model) if config.api.reasoning is None else config.api.reasoning
    hosted = d.thinking == "openai-names" and default_chat(config.model, config.api.base_urls)
    if hosted and reasons:
        raise HarnessError(f"--temperature {config.temperature:g}: OpenAI's reasoning models reject temperature")
