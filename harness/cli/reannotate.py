"""`run_eval.py reannotate --model M --out FILE`: Zhang et al. (2025)'s LLM re-annotation of a C-STS split. Writes a
labels file that `run_eval.py --labels FILE` evaluates against, every reply beside it, and the agreement."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.cli.declared import add_settings, build
from harness.cli.options import DATA
from harness.cli.parser import Parser
from harness.config.settings import RunConfig
from harness.inputs import check_output, read_json
from harness.types import HarnessError

EXIT_INCOMPLETE = 3  # as a run: files written, some requests failed; the same command again retries only those


def reannotate_parser() -> Parser:
    from harness.variants.reannotate import MAX_TOKENS

    p = Parser(
        prog="run_eval.py reannotate",
        description="LLM re-annotation of C-STS (Zhang et al. 2025): optionally rewrite each condition (Figure 3), "
        "then rate each pair under it (Figure 4, 5 synthetic shots, JSON replies). Writes a labels file for "
        "`run_eval.py --labels FILE`, the replies (FILE.replies.jsonl) and the agreement (FILE.agreement.json).",
    )
    shared = {  # its own words for what a run's options mean here
        "model": "required: the model that re-annotates (any backend's)",
        "split": "C-STS split: train, validation or test",
        "limit": "only the split's first N rows (default: all)",
        "sample": "a seeded random N of the split's rows (--sample-seed; Zhang et al.: a random 100; default: none)",
        "max_tokens": "output tokens per reply",
        "results_dir": "where the response cache lives by default",
    }
    add_settings(p, RunConfig, ("model", "backend"), help=shared)
    p.add_argument("--out", type=Path, required=True, help="required: the labels file to write (TSV)")
    p.add_argument("--overwrite", action="store_true", help="replace --out and its two sidecar files if they exist")
    add_settings(p, RunConfig, ("split", "limit", "sample", "sample_seed"), help=shared)
    p.add_argument(
        "--rewrite-conditions",
        action="store_true",
        help="first rewrite each condition (Figure 3); the labels file then carries the conditions, a new data "
        "version whose hash runs record",
    )
    p.add_argument(
        "--conditions",
        type=Path,
        metavar="FILE",
        help="rate under the conditions of a labels file `reannotate --rewrite-conditions` wrote (Zhang et al.: "
        "GPT-4o's conditions, rated by both models); its agreement file names the model that rewrote them (default: "
        "none, the split's own conditions)",
    )
    p.add_argument("--repeats", type=int, default=1, help="ask each rating N times (repeat-run Krippendorff's alpha)")
    p.add_argument(
        "--temperature",
        type=float,
        default=0.0,
        help="sampling temperature (the paper does not say; 0: the harness's greedy default, where repeats only "
        "measure the provider's own nondeterminism)",
    )
    p.add_argument(
        "--with-original",
        action="store_true",
        help="label = mean of the ratings and the original label, rounded (Zhang et al.'s V(y_human + y_LLM)); "
        "default: the mean of the ratings alone",
    )
    # The run's options that reach the re-annotating model, worded and checked as for a run
    fields = ("max_tokens", "chat", "think_tags", *DATA, "results_dir", "dry_run", "progress", "api", "local")
    add_settings(p, RunConfig, fields, help=shared, default={"max_tokens": MAX_TOKENS})
    return p


def sidecars(out: Path) -> tuple[Path, Path]:
    """The files written beside the labels file: the replies and the agreement."""
    return out.with_name(out.stem + ".replies.jsonl"), out.with_name(out.stem + ".agreement.json")


def reference_labels(split: str, rows: int) -> tuple[dict[str, float | None] | None, str]:
    """Tu et al.'s labels where they can be compared (matched by row position: the official validation file only),
    else None and why not."""
    from harness.datasets.labels import load_reannotated

    if split != "validation":
        return None, "Tu et al.'s labels cover the C-STS validation split only"
    tu = load_reannotated()
    if len(tu) != rows:
        return None, f"not the official validation file ({rows} rows, Tu et al.'s has {len(tu)}): rows not matched"
    return tu, ""


def cmd_reannotate(argv: Sequence[str]) -> int:
    from harness.cli.summary import print_dry_run
    from harness.datasets.choose import load_dataset
    from harness.datasets.labels import conditions_hash, labels_tsv
    from harness.results.write import write_atomic
    from harness.scoring.agreement import PUBLISHED, agreement
    from harness.scoring.reannotation import counts
    from harness.variants.reannotate import Settings, check, estimate, reannotate
    from harness.variants.validate import validate_run

    a = reannotate_parser().parse_args(argv)
    check_output(a.out, "--out", directory=False)
    replies_file, agreement_file = sidecars(a.out)
    for path in (replies_file, agreement_file):
        check_output(path, "a file beside --out", directory=False)
    existing = [str(p) for p in (a.out, replies_file, agreement_file) if p.exists()]
    if existing and not a.overwrite:  # a labels file may be hours of paid replies: never replaced unasked
        raise HarnessError(
            f"--out: {', '.join(existing)} already exists: pass another --out, or --overwrite to replace it"
        )
    # The options a run shares, as a run takes them (C-STS); --repeats and --temperature are this command's own
    # (Settings), never the scoring run's repeated samples (harness/scoring/repeats.py).
    config: RunConfig = dataclasses.replace(build(RunConfig, a), repeats=1, temperature=0.0)
    given, rewriter = given_conditions(a.conditions, a.rewrite_conditions)
    settings = Settings(a.rewrite_conditions, a.repeats, a.temperature, a.with_original, given)
    validate_run(config)  # the run command's checks of the values, the model and its backend
    check(config, settings)
    dataset = load_dataset("csts", a.split, a.data_dir, a.archive, a.password_file)
    examples = chosen_rows(config, dataset.examples)
    missing = [e.id for e in examples if given is not None and e.id not in given]
    if missing:
        raise HarnessError(
            f"--conditions {a.conditions}: no condition for {len(missing)} row(s) rated ({missing[0]} ...)"
        )
    if a.dry_run:
        print_dry_run(estimate(config, settings, examples))
        return 0
    outcome = reannotate(config, settings, examples)
    original = {e.id: e.label for e in outcome.examples}
    tu, why = reference_labels(a.split, len(dataset.examples))
    record: dict[str, Any] = {
        "model": a.model,
        "split": a.split,
        "rows": len(outcome.examples),
        "repeats": a.repeats,
        "temperature": a.temperature,
        "label": "mean of ratings and original label, rounded" if a.with_original else "mean of ratings, rounded",
        "labelled": sum(v is not None for v in outcome.labels.values()),
        "ratings": counts(outcome.rating_readings),
        **agreement(outcome.ratings, outcome.labels, original, tu, why),
        "published": PUBLISHED,
        "data_hashes": dataset.file_hashes,
        "metrics": outcome.metrics,
    }
    if a.with_original:
        record["kappa_vs_original"]["note"] = "the labels average in the original label: agreement is inflated"
    record |= published_verdicts(setup_of(config, settings, len(dataset.examples), len(examples), rewriter))
    if outcome.conditions is not None:
        readings = list(outcome.condition_readings.values())
        changed = sum(outcome.conditions[e.id] != e.condition for e in outcome.examples)
        record["conditions"] = counts(readings) | {
            "changed": changed,
            "kept_original_after_invalid_reply": sum(not r.valid for r in readings),
            "conditions_sha256": conditions_hash(outcome.conditions),
        }
        if given is not None:  # rated under another run's conditions: whose they are
            record["conditions"] |= {"from": str(a.conditions), "rewritten_by": rewriter}
    lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in outcome.replies)
    write_atomic(replies_file, lines)  # first: every paid reply is kept, whatever comes after
    write_atomic(agreement_file, json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    # -1 where no repeat gave a valid rating: such rows are left out when a run evaluates against the file
    write_atomic(a.out, labels_tsv(outcome.labels, outcome.conditions))
    print_agreement(record)
    print(f"labels: {a.out}  (run_eval.py --model ... --split {a.split} --labels {a.out})")
    print(f"replies: {replies_file}\nagreement: {agreement_file}")
    return EXIT_INCOMPLETE if outcome.errors else 0


def chosen_rows(config: RunConfig, rows: tuple[Any, ...]) -> tuple[Any, ...]:
    """The rows re-annotated: all, the first --limit, or a seeded --sample (harness/datasets/items.py, as a run)."""
    from harness.datasets.items import select

    return select(rows, config.limit, config.sample, config.sample_seed, where=f"C-STS {config.split}")


def given_conditions(path: Path | None, rewrite: bool) -> tuple[dict[str, str] | None, str | None]:
    """--conditions FILE: the conditions a `reannotate --rewrite-conditions` run wrote, and the model that wrote them
    (its agreement file's); (None, None) without the option."""
    from harness.datasets.labels import read_labels_file

    if path is None:
        return None, None
    if rewrite:
        raise HarnessError("--conditions and --rewrite-conditions: rate under given conditions, or rewrite them")
    conditions = read_labels_file(path, "--conditions file").conditions
    if not conditions:
        raise HarnessError(f"--conditions {path}: no condition column (a labels file of `--rewrite-conditions`)")
    agreement_file = sidecars(path)[1]
    record = read_json(agreement_file, "agreement file", 64 * 1024 * 1024)
    rewriter = record.get("model") if isinstance(record, dict) and "conditions" in record else None
    if not isinstance(rewriter, str):
        raise HarnessError(f"agreement file {agreement_file}: names no model that rewrote the conditions")
    return conditions, rewriter


def setup_of(config: RunConfig, settings: Any, split_rows: int, rows: int, given_by: str | None = None) -> Any:
    """What this re-annotation's agreement rests on (scoring/agreement.py Setup); `given_by`: who rewrote the
    conditions of --conditions FILE."""
    from harness.scoring.agreement import Setup

    chosen = "sample" if config.sample is not None else "first" if config.limit is not None else "all"
    rewriter = config.model if settings.rewrite_conditions else given_by
    return Setup(
        (config.model,),
        settings.repeats,
        config.split,
        split_rows,
        chosen,
        rows,
        settings.temperature,
        settings.with_original,
        rewriter,
    )


def published_verdicts(setup: Any) -> dict[str, Any]:
    """The record's `setup` and whether each of Zhang et al.'s figures may be set beside ours (`published_verdicts`)."""
    from harness.scoring.agreement import judge_alpha, judge_kappa

    verdicts = {"alpha": judge_alpha(setup), "kappa_vs_original": judge_kappa(setup)}
    return {"setup": dataclasses.asdict(setup), "published_verdicts": verdicts}


def print_published(r: dict[str, Any]) -> None:
    """Zhang et al.'s two figures, each with whether ours may be set beside it, as a run's comparability."""
    p, v = r["published"], r["published_verdicts"]
    print(f"  published (Zhang et al. 2025, §3): alpha {p['alpha']}: {v['alpha']}")
    print(f"  published (Zhang et al. 2025, §3): kappa vs original {p['kappa_vs_original']}: {v['kappa_vs_original']}")


def _stat(s: dict[str, Any]) -> str:
    value = "None" if s["value"] is None else f"{s['value']:.3f}"
    return f"{value} (n={s['n']}" + (f"; {s['note']})" if s["note"] else ")")


def print_agreement(r: dict[str, Any]) -> None:
    """The headline numbers, each with its note where it could mislead."""
    rc = r["ratings"]
    invalid = "n/a" if rc["invalid_pct"] is None else f"{rc['invalid_pct']:.1f}%"
    print(
        f"reannotate ({r['model']}, {r['split']}): {r['rows']} rows x {r['repeats']} repeats; "
        f"{r['labelled']} labelled; rating replies: {rc['replies']}, invalid {invalid} "
        f"(invalid-json {rc['invalid-json']}, bad-field {rc['bad-field']}, echo {rc['echo']}, "
        f"embedded {rc['embedded']}, errors {rc['error']})"
    )
    if "conditions" in r:
        c = r["conditions"]
        print(
            f"  conditions: {c['changed']} changed of {c['replies']}; invalid replies {c['invalid-json']} "
            f"invalid-json, {c['bad-field']} bad-field, {c['unencodable']} unencodable, {c['error']} errors "
            "(original kept)"
        )
    print(
        f"  Krippendorff's alpha (repeats): ordinal {_stat(r['alpha_ordinal'])}, interval {_stat(r['alpha_interval'])}"
    )
    print(f"  Cohen's kappa (unweighted) vs original labels: {_stat(r['kappa_vs_original'])}")
    print(f"  Spearman vs original labels: {_stat(r['spearman_vs_original'])}")
    print(f"  vs Tu et al. 2024 labels: kappa {_stat(r['kappa_vs_tu2024'])}, Spearman {_stat(r['spearman_vs_tu2024'])}")
    print_published(r)
