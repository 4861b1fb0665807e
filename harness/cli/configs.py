"""The parsed options as configs: a RunConfig for one run; for a sweep, its base RunConfig and the grid.

The grid options (--dataset, --model, --instr, --shots) take one value or a comma list; argparse splits the
lists itself (`CommaList` is their `type=`), so a sweep is built from the parsed namespace like a single run:
`config_from_args` takes each option's first value, `grid_from_args` the lists (sweep.cells combines them).
Every default comes from RunConfig and its option groups (harness/config/settings.py) through the parser.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any

from harness.calling.batch.options import batch_options
from harness.cli.case_options import case_options
from harness.config.settings import ApiOptions, LocalOptions, RunConfig
from harness.sweep import GRID_FIELDS
from harness.types import HarnessError

REASONING = {"auto": None, "yes": True, "no": False}  # --reasoning's words for ApiOptions.reasoning


def shard_arg(text: str) -> tuple[int, int]:
    """argparse `type=` of --shard: "K/N" with 1 <= K <= N."""
    k, sep, n = text.partition("/")
    if not sep or not k.strip().isdigit() or not n.strip().isdigit() or not 1 <= int(k) <= int(n):
        raise argparse.ArgumentTypeError(f"{text!r} is not K/N with 1 <= K <= N (e.g. 2/4)")
    return int(k), int(n)


class CommaList:
    """argparse `type=`: a single value converted as before (argparse words its errors), or a comma list ->
    a list of converted values, order kept, repeats dropped (a bad item is one HarnessError line)."""

    def __init__(self, flag: str, convert: Callable[[str], Any] = str, choices: Sequence[str] = ()) -> None:
        self.flag, self.convert, self.choices = flag, convert, tuple(choices)
        self.__name__ = getattr(convert, "__name__", "value")  # argparse's "invalid int value: 'x'" names it

    def __call__(self, text: str) -> Any:
        if "," not in text:
            if self.choices and text not in self.choices:
                choices = ", ".join(map(repr, self.choices))  # argparse's own wording for a bad choice
                raise argparse.ArgumentTypeError(f"invalid choice: {text!r} (choose from {choices})")
            return self.convert(text)
        values = [v.strip() for v in text.split(",")]
        if any(not v for v in values):
            raise HarnessError(f"{self.flag} {text!r}: empty item in the comma list")
        return [self._item(v) for v in dict.fromkeys(values)]

    def _item(self, value: str) -> Any:
        if self.choices and value not in self.choices:
            name = self.flag.removeprefix("--")
            raise HarnessError(f"unknown {name} {value!r} in {self.flag}; choose from {', '.join(self.choices)}")
        try:
            return self.convert(value)
        except ValueError:
            raise HarnessError(f"{self.flag}: {value!r} is not {_kind(self.convert)}") from None


def _kind(convert: Callable[[str], Any]) -> str:
    return "an integer" if convert is int else f"a valid {getattr(convert, '__name__', 'value')}"


def first(value: Any) -> Any:
    """A grid option's value for the base config: the single value, or a comma list's first."""
    return value[0] if isinstance(value, list) else value


def grid_from_args(a: argparse.Namespace) -> dict[str, list[Any]]:
    """{RunConfig field: values} for each grid option given as a comma list; {} means a single run."""
    return {name: getattr(a, name) for name in GRID_FIELDS if isinstance(getattr(a, name), list)}


def api_options(a: argparse.Namespace) -> ApiOptions:
    """The API options group (options.add_api_args) as ApiOptions; the run and reannotate commands share it."""
    return ApiOptions(
        batch=batch_options(a),
        base_urls=tuple(a.base_url),
        concurrency=a.concurrency,
        rpm=a.rpm,
        tpm=a.tpm,
        timeout=a.timeout,
        max_retries=a.max_retries,
        wait_for_server=a.wait_for_server,
        max_reply_mb=a.max_reply_mb,
        cache=a.cache,
        no_cache=a.no_cache,
        refresh=a.refresh,
        max_cost=a.max_cost,
        prices=a.prices,
        reasoning=REASONING[a.reasoning],
        reasoning_tokens=a.reasoning_tokens,
        reasoning_effort=a.reasoning_effort,
        anthropic_greedy=a.anthropic_greedy,
    )


def local_options(a: argparse.Namespace) -> LocalOptions:
    """The local-backend options group (options.add_local_args) as LocalOptions."""
    return LocalOptions(
        dtype=a.dtype,
        tensor_parallel=a.tensor_parallel,
        data_parallel=a.data_parallel,
        gpu_memory_utilization=a.gpu_memory_utilization,
        max_model_len=a.max_model_len,
        batch_size=a.batch_size,
    )


def config_from_args(a: argparse.Namespace) -> RunConfig:
    """The parsed options as a RunConfig (validate.validate checks the values)."""
    api, local = api_options(a), local_options(a)
    return RunConfig(
        model=first(a.model),  # a comma list's first value: the sweep's base (grid_from_args has the rest)
        backend=a.backend,
        dataset=first(a.dataset),
        split=a.split,
        shots=first(a.shots),
        instr=first(a.instr),
        template=a.template,
        seed=a.seed,
        limit=a.limit,
        shard=a.shard,
        labels=a.labels,
        subset=a.subset,
        subset_seed=a.subset_seed,
        variant=a.variant,
        answer_model=a.answer_model,
        answer_backend=a.answer_backend,
        answers=a.answers,
        data_dir=a.data_dir,
        archive=a.archive,
        password_file=a.password_file,
        results_dir=a.results_dir,
        run_id=a.run_id,
        dry_run=a.dry_run,
        progress=not a.no_progress,
        api=api,
        local=local,
        embed=case_options(a),
        chat=a.chat,
        stop=tuple(a.stop),
        max_tokens=a.max_tokens,
        shot_sampler=a.shot_sampler,
        shot_seed=a.shot_seed,
        truncate_input=a.truncate_input,
        scoring=a.scoring,
        constrain=a.constrain,
        parse=a.parse,
        think_tags=a.think_tags,
        config_file=getattr(a, "config", None),
    )
