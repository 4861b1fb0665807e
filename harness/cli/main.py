"""Command line: sub-commands, the run and what it prints; every HarnessError becomes one line and exit 2."""

from __future__ import annotations

import argparse
import asyncio
import difflib
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.calling.batch.options import EXIT_BATCH_PENDING
from harness.cli.compare_cmd import cmd_compare
from harness.cli.config_file import split_config
from harness.cli.configs import config_from_args, grid_from_args
from harness.cli.errors import cmd_errors
from harness.cli.options import Parser, add_data_args, run_parser
from harness.cli.reannotate import cmd_reannotate
from harness.cli.reannotate_merge import cmd_reannotate_merge
from harness.cli.report_cmd import cmd_report  # report_cmd loads the report's modules when it runs
from harness.cli.summary import print_dry_run, print_dry_run_total, print_summary, qa_embed_yardstick
from harness.config.settings import RunConfig
from harness.inputs import check_output, disk_full, quiet_on_closed_stdout
from harness.types import HarnessError

EXIT_USAGE = 2
EXIT_INCOMPLETE = 3  # results written, but some requests failed for good
EXIT_SIGINT, EXIT_SIGTERM = 130, 143  # 128 + the signal's number, as shells report it


def extract_parser() -> Parser:
    p = Parser(prog="run_eval.py extract", description="Decrypt the C-STS release into a directory.")
    p.add_argument("--archive", type=Path, required=True, help="required: the encrypted release csts.tar.enc")
    p.add_argument(
        "--password-file", type=Path, help="file holding the password (default: the password itself in $CSTS_PASSWORD)"
    )
    p.add_argument(
        "--out", type=Path, required=True, help="required: directory to write csts_{train,validation,test}.csv into"
    )
    return p


def cmd_run(argv: Sequence[str]) -> int:
    name, rest = split_config(argv)
    if name is not None:  # --config FILE or RECIPE: one or several runs, the command line over the file
        from harness.cli.config_run import run_config_file

        return run_config_file(name, rest, execute)
    code, _, html = execute(run_parser().parse_args(argv))
    if html is not None:
        print(f"html: {html.resolve()}")  # last: the page to open
    return code


def execute(args: argparse.Namespace) -> tuple[int, list[Path], Path | None]:
    """One parsed command line: a run or a sweep. (exit status, the run folders written or reused, a sweep's
    index.html)."""
    config, grid = config_from_args(args), grid_from_args(args)
    if grid:  # comma lists in --model/--shots/--instr/--dataset: a sweep
        return cmd_sweep(config, grid)
    from harness.runner import run  # deferred until the options parse: `--help` stays instant

    result = run(config)
    m = result.metrics
    if config.dry_run:
        print_dry_run(m)
        print(dry_run_protocol(result.run_dir))
    else:
        print_summary(m, config.model)
        if (line := qa_embed_yardstick(config, m)) is not None:
            print(line)
    print(f"results: {result.run_dir}")
    # Failed requests leave the run incomplete: a non-zero exit tells scripts to rerun (only those are resent).
    return (EXIT_INCOMPLETE if m.get("errors") else 0), [result.run_dir], None


def dry_run_protocol(run_dir: Path) -> str:
    """Whether a lone dry run's settings are the paper's (reporting/recipe.py `protocol_line`)."""
    from harness.reporting.published import load_published
    from harness.reporting.recipe import protocol_line
    from harness.results.read import load_run

    return protocol_line(load_run(run_dir), load_published())


def cmd_extract(argv: Sequence[str]) -> int:
    from harness.datasets.release import extract_release, find_password

    a = extract_parser().parse_args(argv)
    check_output(a.out, "--out", directory=True)
    found = find_password(a.password_file)
    if found is None:
        raise HarnessError("extract needs --password-file FILE (or CSTS_PASSWORD in the environment)")
    for path in extract_release(a.archive, found[0], a.out, found[1]):
        print(path)
    return 0


def data_report_parser() -> Parser:
    p = Parser(
        prog="run_eval.py data-report", description="Split sizes, label distributions, lengths, label-set agreement."
    )
    p.add_argument(
        "--dataset", default="all", help="which dataset to describe: all, csts, stsb or a dataset file (FILE.toml)"
    )
    add_data_args(p)
    p.add_argument("--json", type=Path, help="also write the report as JSON to this file (default: none)")
    return p


def cmd_data_report(argv: Sequence[str]) -> int:
    import json
    import os

    from harness.datasets import DATASETS
    from harness.datasets.choose import describe_dataset, load_dataset
    from harness.reporting.datasets import csts_label_agreement, split_summary, to_markdown
    from harness.results.write import write_atomic

    a = data_report_parser().parse_args(argv)
    if a.json:
        check_output(a.json, "--json", directory=False)
    have_csts = a.data_dir or a.archive or os.environ.get("CSTS_DATA_DIR")
    names = list(DATASETS) if a.dataset == "all" else [a.dataset]
    if a.dataset == "all" and not have_csts:
        names = ["stsb"]
        print("note: C-STS left out (no --data-dir, --archive or CSTS_DATA_DIR given)", file=sys.stderr)
    report: dict[str, object] = {"datasets": {}}
    for name in names:
        splits = {}
        described = describe_dataset(name)
        for split in described.splits:
            ds = load_dataset(name, split, a.data_dir, a.archive, a.password_file)
            splits[split] = split_summary(ds.examples, with_condition=described.conditions)
            if name == "csts" and split == "validation":
                report["agreement"] = csts_label_agreement(ds.examples)
        report["datasets"][ds.name] = splits  # type: ignore[index]
    print(to_markdown(report))
    if a.json:
        write_atomic(a.json, json.dumps(report, indent=2) + "\n")
    return 0


# --- sweeps, reports, comparisons and overlap ----------------------------------------------------


def cmd_sweep(base: RunConfig, grid: dict[str, list[Any]]) -> tuple[int, list[Path], Path | None]:
    from harness.sweep import run_sweep

    result = run_sweep(base, grid)
    run_dirs = [c.run_dir for c in result.cells]
    print(f"sweep: {len(result.cells)} cells ({sum(c.reused for c in result.cells)} reused) -> {result.sweep_dir}")
    for c in result.failed:
        print(f"warning: cell {c.label}: {c.errors} queries have no prediction -> {c.run_dir}", file=sys.stderr)
    if result.failed:
        print(
            f"warning: {len(result.failed)} of {len(result.cells)} cells have failed requests; rerun the same "
            "command to retry them (finished cells are reused)",
            file=sys.stderr,
        )
    if base.dry_run:  # no report is written: the cost of the whole sweep instead of a page to open
        print_dry_run_total([c.estimate for c in result.cells if c.estimate is not None], f"{len(result.cells)} cells")
        return 0, run_dirs, None
    html = result.sweep_dir / "report" / "index.html"  # printed last by the caller: once, whatever ran the sweep
    return (EXIT_INCOMPLETE if result.failed else 0), run_dirs, html


def overlap_parser() -> Parser:
    p = Parser(prog="run_eval.py overlap", description="Text shared between the few-shot pool and the evaluated split.")
    p.add_argument("--dataset", default="csts", help="dataset to compare splits of: csts, stsb or a FILE.toml")
    p.add_argument("--pool", default="train", help="the split shots come from")
    p.add_argument("--eval", default="validation", help="the evaluated split")
    add_data_args(p)
    return p


def cmd_overlap(argv: Sequence[str]) -> int:
    from harness.datasets.choose import dataset_name, load_dataset
    from harness.datasets.overlap import format_overlap, overlap

    a = overlap_parser().parse_args(argv)
    evaluated = load_dataset(a.dataset, a.eval, a.data_dir, a.archive, a.password_file).examples
    pool = load_dataset(a.dataset, a.pool, a.data_dir, a.archive, a.password_file).examples
    name = dataset_name(a.dataset)
    print(f"{name}: pool {a.pool} ({len(pool):,} rows) vs evaluated {a.eval} ({len(evaluated):,} rows)")
    print(format_overlap(overlap(pool, evaluated), a.pool, a.eval), end="")
    return 0


def cmd_batches(argv: Sequence[str]) -> int:
    from harness.cli.batches import cmd_batches as batches  # deferred: the batch store loads only for this command

    return batches(argv)


COMMANDS = {  # keys as in options.COMMAND_HELP, which `run_eval.py --help` lists
    "extract": cmd_extract,
    "data-report": cmd_data_report,
    "overlap": cmd_overlap,
    "report": cmd_report,
    "compare": cmd_compare,
    "batches": cmd_batches,
    "errors": cmd_errors,
    "reannotate": cmd_reannotate,
    "reannotate-merge": cmd_reannotate_merge,
}


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; a reader that stops early (`| head -1`) ends it quietly (harness/inputs.py)."""
    return quiet_on_closed_stdout(lambda: _main(argv))


def _main(argv: Sequence[str] | None = None) -> int:
    """Dispatch to a sub-command (first word) or the default evaluation run."""
    from harness.calling.batch import BatchesPending

    args = list(sys.argv[1:] if argv is None else argv)
    command = COMMANDS.get(args[0]) if args else None
    previous = _on_sigterm()
    try:
        if command is not None:
            return command(args[1:])
        if args and not args[0].startswith("-"):
            raise HarnessError(unknown_command(args[0]))
        return cmd_run(args)
    except HarnessError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as e:
        if disk_full(e):
            # A write no step above named (each names its own path where it can): still one line, not a traceback.
            print(f"error: the disk is full ({e}); answers already in the response cache are kept", file=sys.stderr)
            return EXIT_USAGE
        if e.filename is None:
            raise
        # Any other refusal of a path (a name too long, no permission, a loop of links): the path and the system's
        # reason in one line, as every bad input is (docs/running.md "Bad input and exit status").
        print(f"error: {os_error(e)}", file=sys.stderr)
        return EXIT_USAGE
    except BatchesPending as e:
        print(f"batches pending: {e}", file=sys.stderr)
        return EXIT_BATCH_PENDING
    except KeyboardInterrupt as e:
        print(interrupted(e), file=sys.stderr)
        return EXIT_SIGTERM if isinstance(getattr(e, "signal", e), Terminated) else EXIT_SIGINT
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def os_error(e: OSError) -> str:
    """`PATH: reason` (and the second path of a rename or link) for an OSError on a path."""
    second = f" -> {e.filename2}" if e.filename2 is not None else ""
    return f"{e.filename}{second}: {e.strerror or type(e).__name__}"


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised as a KeyboardInterrupt so that it stops asyncio's loop as Ctrl-C does and cleanup runs
    (caches close, claims are released)."""


def _on_sigterm() -> signal.Handlers | Any | None:
    """Turn SIGTERM into Terminated while main() runs (only possible in the main thread)."""

    def handler(signum: int, frame: object) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no event loop: stop where the program is, as Ctrl-C does
            raise Terminated from None
        # Inside an event loop the frame is some task's or transport callback's: raised there, asyncio records it
        # on that task or transport and prints "Task exception was never retrieved" or "Fatal error on
        # transport" tracebacks. Raised from a callback of its own it leaves the loop as Ctrl-C would, and the
        # loop's runner cancels the tasks left, which close their connections and caches.
        loop.call_soon_threadsafe(_raise_terminated)

    try:
        return signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread
        return None


def interrupted(e: KeyboardInterrupt) -> str:
    """The line a signal ends the command with: what was kept. The run that was going wrote no folder; answers
    from API and local models that reached the response cache before the signal are reused by a rerun
    (offline baselines and --no-cache keep nothing); a sweep's finished cells are kept (harness/sweep.py)."""
    from harness.sweep import SweepInterrupted

    cause = e.signal if isinstance(e, SweepInterrupted) else e
    written = "no results were written"
    if isinstance(e, SweepInterrupted):
        kept = ", ".join(str(c.run_dir) for c in e.kept)
        written = (
            f"the sweep's {len(e.kept)} finished cells are kept and reused by the same command ({kept}); the cell "
            "that was running and the sweep's report were not written"
            if e.kept
            else "no cell of the sweep had finished: no results were written"
        )
    return (
        f"error: interrupted ({'SIGTERM' if isinstance(cause, Terminated) else 'SIGINT'}); {written}; answers "
        "already in the response cache are reused when the same command runs again"
    )


def _raise_terminated() -> None:
    raise Terminated


def unknown_command(word: str) -> str:
    """A first word that is no command: a run takes only options, so this is a mistyped command."""
    close = difflib.get_close_matches(word, COMMANDS, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"unknown command {word!r}: {hint}commands are {', '.join(COMMANDS)}; a run takes options only (--model ...)"
