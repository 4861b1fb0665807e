"""Command line: argparse -> RunConfig -> runner.run(); every HarnessError becomes one line and exit 2."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from harness.prompts import INSTRUCTIONS
from harness.types import ApiOptions, HarnessError, LocalOptions, RunConfig

EXIT_USAGE = 2
EXIT_INCOMPLETE = 3  # results written, but some requests failed for good


def add_data_args(p: argparse.ArgumentParser) -> None:
    """Where C-STS comes from: an extracted directory, or the encrypted release and its password."""
    p.add_argument(
        "--data-dir", type=Path, help="directory with csts_{train,validation,test}.csv (or set CSTS_DATA_DIR)"
    )
    p.add_argument("--archive", type=Path, help="the official encrypted release csts.tar.enc (decrypted in memory)")
    p.add_argument("--password-file", type=Path, help="file holding the archive's password (or set CSTS_PASSWORD)")


def run_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="run_eval.py",
        description="Evaluate a model by prompting on C-STS or STS-B. Other commands: `run_eval.py extract --help`.",
    )
    p.add_argument(
        "--model", required=True, help="model name (gpt-4, claude-..., or an offline baseline: overlap, random)"
    )
    p.add_argument("--backend", help="override the backend implied by the model name")
    p.add_argument("--dataset", default="csts", choices=["csts", "stsb"])
    p.add_argument(
        "--split", default="validation", help="validation (default), test (C-STS: writes the submission file) or train"
    )
    p.add_argument(
        "--shots", type=int, default=0, help="in-context examples k (C-STS: k/2 sentence pairs, both conditions)"
    )
    p.add_argument("--instr", default="none", help=f"instruction level: {', '.join(INSTRUCTIONS)}")
    p.add_argument("--template", help="template name under templates/<dataset>/ (overrides --instr) or a .j2 file")
    p.add_argument("--seed", type=int, default=0, help="seeds shot choice and the invalid-output fallback")
    p.add_argument(
        "--shot-sampler",
        default="seeded",
        choices=["seeded", "reference"],
        help="seeded: shots drawn per query from (seed, query id) (default); reference: the reference code's one "
        "global random stream over train, then validation, then test (princeton-nlp/c-sts)",
    )
    p.add_argument("--shot-seed", type=int, help="seed of the shot choice (default: --seed; 42 for reference)")
    p.add_argument("--limit", type=int, help="evaluate only the first N queries")
    p.add_argument("--labels", default="original", help="label set: original, or reannotated (Tu et al. 2024)")
    p.add_argument(
        "--subset", default="all", help="all, reannotated-test or reannotated-train (seeded 70/30 of re-annotated)"
    )
    p.add_argument("--subset-seed", type=int, default=0, help="seed of the 70/30 re-annotated split")
    p.add_argument(
        "--variant",
        default="sentences",
        choices=["sentences", "qa", "qa-embed"],
        help="sentences (the paper's prompt); qa: answer each condition as a question, then score the answers "
        "(Tu et al. 2024); qa-embed: cosine of the answers' embeddings (--model is the embedding model)",
    )
    p.add_argument("--answer-model", help="qa variants: the model that answers the questions (default: --model)")
    p.add_argument("--answer-backend", help="override the backend implied by --answer-model")
    p.add_argument("--answers", type=Path, help="qa variants: reuse answers.jsonl from an earlier run")
    p.add_argument(
        "--scoring",
        default="parsed",
        choices=["parsed", "expected"],
        help="parsed: the paper's first-number rule only (default); expected: also the probability-weighted "
        "score from the first output token (hf, vllm), reported as *_expected beside it",
    )
    add_data_args(p)
    p.add_argument("--results-dir", type=Path, default=Path("results"))
    p.add_argument("--run-id", help="name of the run folder (default: dataset-split-model-k-instr-time)")
    p.add_argument("--dry-run", action="store_true", help="render every prompt and count tokens; call no model")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_api_args(p.add_argument_group("API backends (openai, anthropic, OpenAI-compatible servers)"))
    add_local_args(p.add_argument_group("local GPU backends (vllm, hf)"))
    return p


# --- API backend options -------------------------------------------------------------------------


def add_api_args(g: argparse._ArgumentGroup) -> None:
    g.add_argument(
        "--base-url",
        action="append",
        default=[],
        help="OpenAI-compatible server URL, e.g. http://127.0.0.1:8000/v1 (repeatable: spreads the load)",
    )
    g.add_argument("--concurrency", type=int, default=16, help="API requests in flight (default 16)")
    g.add_argument("--timeout", type=float, default=120.0, help="seconds per attempt before it is retried")
    g.add_argument("--max-retries", type=int, default=8, help="retries per request on 408/409/429/5xx/529/timeouts")
    g.add_argument("--cache", type=Path, help="response cache file (default: RESULTS_DIR/cache.sqlite)")
    g.add_argument("--no-cache", action="store_true", help="neither read nor write the response cache")
    g.add_argument("--refresh", action="store_true", help="ignore cached answers; send again and store the new ones")
    g.add_argument("--max-cost", type=float, help="US dollars this run may spend; stops sending before exceeding it")
    g.add_argument("--prices", type=Path, help="JSON price table overriding harness/data/prices.json")
    g.add_argument(
        "--reasoning",
        choices=["auto", "yes", "no"],
        default="auto",
        help="treat the model as a reasoning model (no temperature; max_completion_tokens). auto: by name",
    )
    g.add_argument(
        "--reasoning-tokens",
        type=int,
        default=2048,
        help="max_completion_tokens for reasoning models: hidden reasoning plus the answer (default 2048)",
    )
    g.add_argument("--reasoning-effort", help="reasoning_effort for reasoning models (e.g. low); default: not sent")
    g.add_argument(
        "--anthropic-greedy",
        action="store_true",
        help="temperature 0 via API version 2023-06-01 (models that still allow it); default: model's sampling",
    )


def api_options(a: argparse.Namespace) -> ApiOptions:
    if a.concurrency < 1:
        raise HarnessError(f"--concurrency must be at least 1, got {a.concurrency}")
    if a.timeout <= 0 or a.max_retries < 0:
        raise HarnessError("--timeout must be positive and --max-retries 0 or more")
    if a.max_cost is not None and a.max_cost < 0:
        raise HarnessError(f"--max-cost must be 0 or more, got {a.max_cost}")
    if a.reasoning_tokens < 1:
        raise HarnessError(f"--reasoning-tokens must be at least 1, got {a.reasoning_tokens}")
    return ApiOptions(
        base_urls=tuple(a.base_url),
        concurrency=a.concurrency,
        timeout=a.timeout,
        max_retries=a.max_retries,
        cache=a.cache,
        no_cache=a.no_cache,
        refresh=a.refresh,
        max_cost=a.max_cost,
        prices=a.prices,
        reasoning={"auto": None, "yes": True, "no": False}[a.reasoning],
        reasoning_tokens=a.reasoning_tokens,
        reasoning_effort=a.reasoning_effort,
        anthropic_greedy=a.anthropic_greedy,
    )


# --- local GPU backend options -------------------------------------------------------------------


DTYPES = ("auto", "float32", "float16", "bfloat16")


def add_local_args(g: argparse._ArgumentGroup) -> None:
    g.add_argument("--chat", action="store_true", help="apply the model's chat template (off: raw text, as the paper)")
    g.add_argument("--dtype", default="auto", choices=DTYPES, help="weights and activations (auto: the checkpoint's)")
    g.add_argument("--tensor-parallel", type=int, default=1, metavar="N", help="vllm: split the model over N GPUs")
    g.add_argument(
        "--gpu-memory-utilization", type=float, default=0.9, metavar="F", help="vllm: share of GPU memory (0-1]"
    )
    g.add_argument("--max-model-len", type=int, metavar="N", help="vllm: context length (default: the model's)")
    g.add_argument("--batch-size", type=int, metavar="N", help="hf: prompts per batch (default: chosen to fit memory)")


def local_options(a: argparse.Namespace) -> LocalOptions:
    for flag, value in (("--tensor-parallel", a.tensor_parallel), ("--max-model-len", a.max_model_len)):
        if value is not None and value < 1:
            raise HarnessError(f"{flag} must be at least 1, got {value}")
    if a.batch_size is not None and a.batch_size < 1:
        raise HarnessError(f"--batch-size must be at least 1, got {a.batch_size}")
    if not 0 < a.gpu_memory_utilization <= 1:
        raise HarnessError(f"--gpu-memory-utilization must be in (0, 1], got {a.gpu_memory_utilization}")
    return LocalOptions(
        chat=a.chat,
        dtype=a.dtype,
        tensor_parallel=a.tensor_parallel,
        gpu_memory_utilization=a.gpu_memory_utilization,
        max_model_len=a.max_model_len,
        batch_size=a.batch_size,
    )


# -------------------------------------------------------------------------------------------------


def extract_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="run_eval.py extract", description="Decrypt the C-STS release into a directory.")
    p.add_argument("--archive", type=Path, required=True, help="csts.tar.enc")
    p.add_argument("--password-file", type=Path, help="file holding the password (or set CSTS_PASSWORD)")
    p.add_argument("--out", type=Path, required=True, help="directory to write csts_{train,validation,test}.csv into")
    return p


def config_from_args(a: argparse.Namespace) -> RunConfig:
    if a.limit is not None and a.limit < 1:
        raise HarnessError(f"--limit must be at least 1, got {a.limit}")
    return RunConfig(
        model=a.model,
        backend=a.backend,
        dataset=a.dataset,
        split=a.split,
        shots=a.shots,
        instr=a.instr,
        template=a.template,
        seed=a.seed,
        limit=a.limit,
        labels=a.labels,
        subset=a.subset,
        subset_seed=a.subset_seed,
        variant=a.variant,
        scoring=a.scoring,
        shot_sampler=a.shot_sampler,
        shot_seed=a.shot_seed,
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
        api=api_options(a),
        local=local_options(a),
    )


def _fmt(value: object) -> str:
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def cmd_run(argv: Sequence[str]) -> int:
    from harness.runner import run  # deferred: `--help` stays instant
    from harness.sweep import split_grid

    single, grid = split_grid(argv)
    if grid:  # comma lists in --model/--shots/--instr/--dataset: a sweep
        return cmd_sweep(single, grid)
    config = config_from_args(run_parser().parse_args(argv))
    result = run(config)
    m = result.metrics
    if config.dry_run:
        cost = f"${m['max_cost_usd']:.4f}" if m.get("max_cost_usd") is not None else "unknown (no price for model)"
        print(
            f"dry run: {m['requests']} requests, {m['prompt_tokens']} prompt tokens ({m['token_count']}), "
            f"at most {m['max_output_tokens']} output tokens; cost at most {cost}; no model called"
        )
    else:
        keys = [
            "n",
            "invalid_pct",
            "out_of_range_pct",
            "spearman",
            "pearson",
            "spearman_valid",
            "pearson_valid",
            "mse",
            "errors",
            "spearman_expected",
            "pearson_expected",
            "expected_mass_mean",
        ]
        print("  ".join(f"{k}={_fmt(m[k])}" for k in keys if k in m))
        if "expected_note" in m:
            print(f"note: {m['expected_note']}")
        if "submission" in m:
            print(f"submission: {m['submission']}")
        _report_api(m)
    print(f"results: {result.run_dir}")
    # Failed requests leave the run incomplete: a non-zero exit tells scripts to rerun (only those are resent).
    return EXIT_INCOMPLETE if m.get("errors") else 0


def _report_api(m: dict) -> None:
    """Cache, cost and failed requests of an API run (nothing for offline runs)."""
    cache, usage, dispatch = m.get("cache"), m.get("usage", {}), m.get("dispatch", {})
    if cache and cache["mode"] != "off":
        print(f"cache: {cache['hits']} hits, {cache['misses']} misses")
    if usage.get("cost_usd") is not None:
        print(f"tokens: {usage['input_tokens']} in, {usage['output_tokens']} out; cost ${usage['cost_usd']:.4f}")
    if m.get("errors"):
        answers = m.get("answers", {}).get("dispatch", {})
        first = (dispatch.get("first_errors") or answers.get("first_errors") or ["see samples.jsonl"])[0]
        print(
            f"warning: {m['errors']} queries have no prediction ({first}); failed requests are not cached: "
            "rerun the same command to retry only those",
            file=sys.stderr,
        )


def cmd_extract(argv: Sequence[str]) -> int:
    import os

    from harness.release import extract_release, read_password

    a = extract_parser().parse_args(argv)
    password = read_password(a.password_file) if a.password_file else os.environ.get("CSTS_PASSWORD")
    if password is None:
        raise HarnessError("extract needs --password-file FILE (or CSTS_PASSWORD in the environment)")
    for path in extract_release(a.archive, password, a.out):
        print(path)
    return 0


def data_report_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="run_eval.py data-report", description="Split sizes, label distributions, lengths, label-set agreement."
    )
    p.add_argument("--dataset", default="all", choices=["all", "csts", "stsb"])
    add_data_args(p)
    p.add_argument("--json", type=Path, help="also write the report as JSON to this file")
    return p


def cmd_data_report(argv: Sequence[str]) -> int:
    import json
    import os

    from harness.data import SPLITS, load_dataset
    from harness.datareport import csts_label_agreement, split_summary, to_markdown
    from harness.results import write_atomic

    a = data_report_parser().parse_args(argv)
    have_csts = a.data_dir or a.archive or os.environ.get("CSTS_DATA_DIR")
    names = ["csts", "stsb"] if a.dataset == "all" else [a.dataset]
    if a.dataset == "all" and not have_csts:
        names = ["stsb"]
        print("note: C-STS left out (no --data-dir, --archive or CSTS_DATA_DIR given)", file=sys.stderr)
    report: dict[str, object] = {"datasets": {}}
    for name in names:
        splits = {}
        for split in SPLITS[name]:
            ds = load_dataset(name, split, a.data_dir, a.archive, a.password_file)
            splits[split] = split_summary(ds.examples, with_condition=name == "csts")
            if name == "csts" and split == "validation":
                report["agreement"] = csts_label_agreement(ds.examples)
        report["datasets"][name] = splits  # type: ignore[index]
    print(to_markdown(report))
    if a.json:
        write_atomic(a.json, json.dumps(report, indent=2) + "\n")
    return 0


# --- sweeps, reports, comparisons and overlap ----------------------------------------------------


def cmd_sweep(argv: Sequence[str], grid: dict[str, list[str]]) -> int:
    from harness.sweep import run_sweep

    result = run_sweep(config_from_args(run_parser().parse_args(argv)), grid)
    print(f"sweep: {len(result.cells)} cells ({sum(c.reused for c in result.cells)} reused) -> {result.sweep_dir}")
    return 0


def report_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="run_eval.py report",
        description="Tables (md/csv/tex), plots and CIs from run or sweep folders; calls no model.",
    )
    p.add_argument("paths", nargs="+", type=Path, help="run folders and/or sweep folders")
    p.add_argument(
        "--out", type=Path, help="report folder (default: SWEEP/report for one sweep, else results/report-TIME)"
    )
    p.add_argument("--published", type=Path, help="published numbers CSV (default: the bundled paper_results.csv)")
    return p


def cmd_report(argv: Sequence[str]) -> int:
    from datetime import UTC, datetime

    from harness.published import load_published
    from harness.report import write_report

    a = report_parser().parse_args(argv)
    out = a.out
    if out is None:
        one_sweep = len(a.paths) == 1 and (a.paths[0] / "sweep.json").is_file()
        out = (
            a.paths[0] / "report" if one_sweep else Path("results") / datetime.now(UTC).strftime("report-%Y%m%d-%H%M%S")
        )
    out_dir = write_report(a.paths, out, load_published(a.published) if a.published else None)
    print((out_dir / "report.md").read_text(encoding="utf-8").split("## Published")[0].rstrip())
    print(f"report: {out_dir}")
    return 0


def compare_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="run_eval.py compare", description="Paired comparison of two runs on the items both answered."
    )
    p.add_argument("run_a", type=Path)
    p.add_argument("run_b", type=Path)
    p.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples (default 2000)")
    p.add_argument("--seed", type=int, default=0)
    return p


def cmd_compare(argv: Sequence[str]) -> int:
    from harness.report import compare_runs

    a = compare_parser().parse_args(argv)
    print(compare_runs(a.run_a, a.run_b, a.resamples, a.seed), end="")
    return 0


def overlap_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="run_eval.py overlap", description="Text shared between the few-shot pool and the evaluated split."
    )
    p.add_argument("--dataset", default="csts", choices=["csts", "stsb"])
    p.add_argument("--pool", default="train", help="the split shots come from (default train)")
    p.add_argument("--eval", default="validation", help="the evaluated split (default validation)")
    add_data_args(p)
    return p


def cmd_overlap(argv: Sequence[str]) -> int:
    from harness.data import load_dataset
    from harness.overlap import format_overlap, overlap

    a = overlap_parser().parse_args(argv)
    evaluated = load_dataset(a.dataset, a.eval, a.data_dir, a.archive, a.password_file).examples
    pool = load_dataset(a.dataset, a.pool, a.data_dir, a.archive, a.password_file).examples
    print(f"{a.dataset}: pool {a.pool} ({len(pool):,} rows) vs evaluated {a.eval} ({len(evaluated):,} rows)")
    print(format_overlap(overlap(pool, evaluated), a.pool, a.eval), end="")
    return 0


COMMANDS = {
    "extract": cmd_extract,
    "data-report": cmd_data_report,
    "report": cmd_report,
    "compare": cmd_compare,
    "overlap": cmd_overlap,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Dispatch to a sub-command (first word) or the default evaluation run."""
    args = list(sys.argv[1:] if argv is None else argv)
    command = COMMANDS.get(args[0]) if args else None
    try:
        if command is not None:
            return command(args[1:])
        return cmd_run(args)
    except HarnessError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("error: interrupted; finished responses are kept, rerun to continue", file=sys.stderr)
        return 130
