"""Run folders made up for report tests: synthetic items and replies (never C-STS text), written as runners do."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.results.manifest import write_manifest
from harness.results.read import load_run
from harness.scoring.metrics import compute_metrics
from harness.scoring.parsing import fallback_score, parse_score


def gold(i: int, dataset: str = "csts") -> float:
    return float(1 + (i * 7) % 5) if dataset == "csts" else float((i * 7) % 6)


def make_run(
    results: Path,
    name: str,
    model: str = "gpt-4",
    dataset: str = "csts",
    split: str = "validation",
    instr: str = "long",
    shots: int = 4,
    n: int = 40,
    errors: int = 0,
    invalid_every: int = 0,
    offset: float = 0.0,
    config: dict[str, Any] | None = None,
    new_fields: bool = False,
    dry_run: bool = False,
    outputs: dict[int, str] | None = None,
    seed: int = 0,
    manifest: bool = True,
    served: str | None = None,
) -> Path:
    """A run folder of n items: replies near the labels (+offset; item i % 3 == 0 says 3), every `invalid_every`-th
    reply without a number, parsed by the paper's rule (fallback drawn as the runner draws it), the last `errors`
    requests failed.
    `new_fields` writes reason, finish_reason, usage and served_model as newer runners do; without it the
    samples look like those of older runs. `outputs` replaces replies by item (made-up text). `manifest`: written
    last, as runners do (results/manifest.py); without it the folder is one of a version before manifests.
    `served`: the served_model of every answered sample (with `new_fields`; default: "<model>-served")."""
    label_range = (1.0, 5.0) if dataset == "csts" else (0.0, 5.0)
    records = []
    for i in range(n):
        label = gold(i, dataset)
        guess = 3.0 if i % 3 == 0 else min(label_range[1], label + offset)
        text = outputs[i] if outputs and i in outputs else f"{guess:.1f}"
        if invalid_every and i % invalid_every == 0 and not (outputs and i in outputs):
            text = "I cannot tell."
        rec: dict[str, Any] = {
            "id": str(i),
            "prompt": f"Synthetic prompt for item {i}: how similar are A{i} and B{i}?",
            "shot_ids": [],
            "output": text,
            "parsed": None,
            "valid": False,
            "prediction": None,
            "label": label,
            "error": None,
            "pair": str(i - i % 2) if dataset == "csts" else None,
        }
        if dry_run:
            rec["output"] = None
        elif i >= n - errors:
            rec |= {"output": None, "error": "HTTP 500: synthetic server error"}
        elif (value := parse_score(text)) is None:
            rec["prediction"] = fallback_score(seed, str(i), label_range)
        else:
            rec |= {"parsed": value, "valid": True, "prediction": value}
        if new_fields and not dry_run:
            rec |= {
                "reason": "error" if rec["error"] else "number" if rec["valid"] else "no-number",
                "finish_reason": None if rec["error"] else "stop",
                "usage": None if rec["error"] else {"input_tokens": 30 + i, "output_tokens": 3},
                "served_model": served or f"{model}-served",
            }
        records.append(rec)
    cfg: dict[str, Any] = {
        "settings": {"model": model, "local": {"chat": False}},
        "dataset": dataset,
        "split": split,
        "model": model,
        "backend": "openai",
        "backend_params": {"api": "chat.completions"},
        "shots": shots,
        "seed": seed,
        "limit": None,
        "labels": "original",
        "subset": "all",
        "subset_seed": 0,
        "variant": "sentences",
        "template": f"{dataset}/{instr}.j2",
        "config_hash": name,
        "label_range": list(label_range),
        "n_queries": n,
    } | (config or {})
    run_dir = results / name
    run_dir.mkdir(parents=True)
    (run_dir / "config.json").write_text(json.dumps(cfg), encoding="utf-8")
    (run_dir / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    run = load_run(run_dir)
    metrics: dict[str, Any] = {"dry_run": True, "requests": n} if dry_run else compute_metrics(run.samples, label_range)
    (run_dir / "metrics.json").write_text(json.dumps(metrics), encoding="utf-8")
    if manifest:
        write_manifest(run_dir)
    return run_dir


def overlap_run(results: Path, limit: int = 200, run_id: str = "r") -> Path:
    """A real run folder written by the harness itself: the offline `overlap` model on the first `limit` bundled
    STS-B items (for tests of what readers make of a folder as written, or altered after)."""
    from harness.cli.main import main  # the top of the stack: imported only when a test asks for a run

    args = ["--model", "overlap", "--dataset", "stsb", "--limit", str(limit), "--results-dir", str(results)]
    assert main([*args, "--run-id", run_id, "--no-progress"]) == 0
    return results / run_id
