"""`run_eval.py reannotate-merge A.tsv B.tsv --out FILE`: two models' `reannotate` ratings and the original labels
merged into Zhang et al. (2025)'s three-source label V(y_human + y_GPT-4o + y_Claude) (§2.2, Table 11), with kappa
against the original labels judged beside the paper's 0.247. Reads each labels file's two sidecars (the replies and
the agreement record) through the bounded readers; writes the labels file and its agreement record atomically."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.cli.options import add_data_args
from harness.cli.parser import Parser
from harness.cli.reannotate import published_verdicts, sidecars
from harness.inputs import check_output, read_json, read_text
from harness.types import HarnessError

MAX_SIDECAR = 512 * 1024 * 1024  # a replies file of the whole train split with justifications stays well under this


def merge_parser() -> Parser:
    p = Parser(
        prog="run_eval.py reannotate-merge",
        description="Merge two models' `reannotate` ratings with the original labels into Zhang et al. (2025)'s "
        "V(human + model A + model B): the mean of the three, rounded (a model's repeats are one vote; a model with "
        "no valid rating has none). Writes FILE and FILE.agreement.json.",
    )
    p.add_argument("labels", nargs=2, type=Path, metavar="LABELS", help="two labels files `reannotate` wrote")
    p.add_argument("--out", type=Path, required=True, help="required: the merged labels file to write (TSV)")
    p.add_argument("--overwrite", action="store_true", help="replace --out and its agreement file if they exist")
    add_data_args(p)
    return p


def _json(path: Path, what: str) -> Any:
    return read_json(path, what, MAX_SIDECAR)


def read_source(labels: Path) -> tuple[dict[str, Any], dict[str, list[int | None]]]:
    """One `reannotate` output: its agreement record and each row's ratings (one per repeat, None: not valid)."""
    replies_file, agreement_file = sidecars(labels)
    record = _json(agreement_file, "agreement file")
    need: dict[str, type | tuple[type, ...]] = {"model": str, "split": str, "repeats": int, "temperature": (int, float)}
    if not isinstance(record, dict) or any(not isinstance(record.get(k), t) for k, t in need.items()):
        raise HarnessError(f"agreement file {agreement_file}: not one `reannotate` wrote (model, split, repeats ...)")
    ratings: dict[str, list[int | None]] = {}
    text = read_text(replies_file, "replies file", MAX_SIDECAR)
    for n, line in enumerate(text.splitlines(), start=1):
        try:
            r = json.loads(line)
        except json.JSONDecodeError:
            raise HarnessError(f"replies file {replies_file} line {n}: not JSON") from None
        if not isinstance(r, dict) or r.get("step") != "rating":
            continue
        value, uid = r.get("value"), r.get("uid")
        if not isinstance(uid, str) or (
            value is not None and (isinstance(value, bool) or value not in (1, 2, 3, 4, 5))
        ):
            raise HarnessError(f"replies file {replies_file} line {n}: no uid, or a rating outside 1-5")
        ratings.setdefault(uid, []).append(None if value is None else int(value))
    return record, ratings


def cmd_reannotate_merge(argv: Sequence[str]) -> int:
    from harness.datasets.choose import load_dataset
    from harness.datasets.labels import labels_tsv, read_labels_file
    from harness.results.write import write_atomic
    from harness.scoring.agreement import PUBLISHED, Setup, cohen_kappa, paired, spearman
    from harness.scoring.reannotation import merged_labels

    a = merge_parser().parse_args(argv)
    check_output(a.out, "--out", directory=False)
    agreement_file = sidecars(a.out)[1]
    check_output(agreement_file, "a file beside --out", directory=False)
    existing = [str(p) for p in (a.out, agreement_file) if p.exists()]
    if existing and not a.overwrite:
        raise HarnessError(f"--out: {', '.join(existing)} already exists: pass another --out, or --overwrite")
    (first, ratings_a), (second, ratings_b) = (read_source(p) for p in a.labels)
    if first["model"].lower() == second["model"].lower():
        raise HarnessError(f"both labels files are {first['model']}'s ratings: V() merges two models'")
    if first["split"] != second["split"]:
        raise HarnessError(f"the labels files rate different splits ({first['split']}, {second['split']})")
    hashes = [(r.get("conditions") or {}).get("conditions_sha256") for r in (first, second)]
    if hashes[0] != hashes[1]:  # Zhang et al.: both models rated under the same (GPT-4o's) conditions
        raise HarnessError("the two models rated under different conditions (their conditions_sha256 differ)")
    dataset = load_dataset("csts", first["split"], a.data_dir, a.archive, a.password_file)
    rows = [e for e in dataset.examples if e.id in ratings_a or e.id in ratings_b]
    unknown = sorted((set(ratings_a) | set(ratings_b)) - {e.id for e in dataset.examples})
    if unknown:  # another file of the split than the one given here: rows would be matched to other pairs
        raise HarnessError(
            f"the ratings name {len(unknown)} row(s) the {first['split']} split lacks ({unknown[0]} ...)"
        )
    original = {e.id: e.label for e in rows}
    labels = merged_labels([ratings_a, ratings_b], original)
    x, y = paired(labels, original)
    setups = [r.get("setup") or {} for r in (first, second)]
    setup = Setup(
        (first["model"], second["model"]),
        max(first["repeats"], second["repeats"]),
        first["split"],
        len(dataset.examples),
        "all" if all(s.get("chosen") == "all" for s in setups) else "part",
        len(rows),
        max(first["temperature"], second["temperature"]),
        True,
        next((s.get("rewritten_by") for s in setups if s.get("rewritten_by")), None) if hashes[0] else None,
    )
    record = {
        "sources": [str(p) for p in a.labels],
        "models": [first["model"], second["model"]],
        "label": "V(original + model A + model B): mean of the three, rounded, halves up (Zhang et al. 2025 §2.2)",
        "rows": len(rows),
        "labelled": sum(v is not None for v in labels.values()),
        "kappa_vs_original": cohen_kappa(x, y).record(),
        "spearman_vs_original": spearman([float(v) for v in x], [float(v) for v in y]).record(),
        "published": PUBLISHED,
        **published_verdicts(setup),
        "data_hashes": dataset.file_hashes,
    }
    inflated = "the labels average in the original label: agreement is inflated"
    few = record["kappa_vs_original"]["note"]  # fewer than 30 items, or kappa undefined
    record["kappa_vs_original"]["note"] = f"{few}; {inflated}" if few else inflated
    record["setup"] = dataclasses.asdict(setup)
    write_atomic(agreement_file, json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    # Rated under one set of rewritten conditions: the merged labels carry them, as each source file does
    conditions = read_labels_file(a.labels[0]).conditions if hashes[0] else {}
    write_atomic(a.out, labels_tsv(labels, {u: conditions[u] for u in labels} if conditions else None))
    kappa = record["kappa_vs_original"]
    value = "None" if kappa["value"] is None else f"{kappa['value']:.3f}"
    print(
        f"reannotate-merge ({' + '.join(record['models'])}, {first['split']}): {record['rows']} rows, "
        f"{record['labelled']} labelled V(original + {' + '.join(record['models'])})"
    )
    print(f"  Cohen's kappa (unweighted) vs original labels: {value} (n={kappa['n']}; {kappa['note']})")
    v = record["published_verdicts"]["kappa_vs_original"]
    print(f"  published (Zhang et al. 2025, §3): kappa vs original {PUBLISHED['kappa_vs_original']}: {v}")
    print(
        f"labels: {a.out}  (run_eval.py --model ... --split {first['split']} --labels {a.out})\n"
        f"agreement: {agreement_file}"
    )
    return 0
