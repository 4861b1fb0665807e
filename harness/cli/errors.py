"""`run_eval.py errors RUN_FOLDER`: Tu et al. (2024, §4.2)'s annotation-error identification from a qa run's
answers; writes the candidates and the scores into one folder and prints the scores."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.cli.declared import add_settings
from harness.cli.options import add_data_args
from harness.cli.parser import Parser
from harness.config.settings import ApiOptions
from harness.inputs import check_output
from harness.types import HarnessError

DEFAULT_EMBED_MODEL = "text-embedding-ada-002"  # Tu et al. 2024, §4.1


def errors_parser() -> Parser:
    p = Parser(
        prog="run_eval.py errors",
        description="Annotation-error candidates (Tu et al. 2024, §4.2) from a finished --variant qa/qa-embed run on "
        "the C-STS validation split: k-means over answer pairs, cosine ranks mapped to labels 1-5, fitted on one "
        "half, scored on the other against the re-annotated labels.",
    )
    p.add_argument("run", type=Path, help="a finished qa or qa-embed run folder (its answers.jsonl)")
    p.add_argument(
        "--distribution",
        default="reannotated",
        choices=["even", "original", "reannotated"],
        help="how ranks map to labels: 20%% each, or as the fitting half's original or re-annotated labels fall",
    )
    p.add_argument("--k-max", type=int, default=20, help="clusters tried, 1..K (the best F1 on the fitting half wins)")
    p.add_argument("--seed", type=int, default=0, help="seed of the half split and of k-means")
    p.add_argument(
        "--embed-model",
        default=DEFAULT_EMBED_MODEL,
        help="embedding model (OpenAI, a --base-url server, or a sentence-transformers dir with --embed-backend); "
        "'hash' is an offline hashed bag of words, for checks only",
    )
    p.add_argument("--embed-backend", help="backend of --embed-model (default: from its name)")
    add_settings(p, ApiOptions, ("base_urls",))  # as a run takes it
    p.add_argument("--labels-file", type=Path, help="re-annotated labels TSV (default: the bundled Tu et al. file)")
    p.add_argument("--out", type=Path, help="output folder (default: RUN/errors-DISTRIBUTION)")
    add_data_args(p)
    return p


def cmd_errors(argv: Sequence[str]) -> int:
    from harness.datasets.choose import load_dataset
    from harness.datasets.labels import REANNOTATED_TSV, load_reannotated
    from harness.results.manifest import write_manifest
    from harness.results.stage import staged
    from harness.scoring.errors import identify
    from harness.variants.error_id import HASH_MODEL, SCORES_KIND, Embedder, backend_embedder, hash_embedder, items_from

    a = errors_parser().parse_args(argv)
    out = a.out or a.run / f"errors-{a.distribution}"
    check_output(out, "--out", directory=True)
    if out.is_dir() and any(out.iterdir()) and not (out / "scores.json").is_file():
        # The folder is replaced whole (staged): never a folder that holds anything but an earlier errors output.
        raise HarnessError(f"--out {out} holds other files (no scores.json of an errors run): choose another folder")
    dataset = load_dataset("csts", "validation", a.data_dir, a.archive, a.password_file)
    reannotated = load_reannotated(a.labels_file or REANNOTATED_TSV)
    embed: Embedder = (
        hash_embedder
        if a.embed_model == HASH_MODEL
        else backend_embedder(a.embed_model, a.embed_backend, tuple(a.base_url), a.run.parent)
    )
    items, left_out = items_from(dataset.examples, a.run / "answers.jsonl", reannotated, embed)
    result = identify(items, a.distribution, a.k_max, a.seed)
    answers = (a.run / "answers.jsonl").read_bytes()
    n_candidates = sum(bool(r["candidate"]) for r in result.rows)
    scores: dict[str, Any] = {
        "kind": SCORES_KIND,  # what `run_eval.py report` looks for in the folders inside a run folder
        "run": str(a.run),
        "answers_sha256": hashlib.sha256(answers).hexdigest(),  # the answers it was computed from
        "labels_file": None if a.labels_file is None else str(a.labels_file),  # None: the bundled Tu et al. file
        "embed_model": a.embed_model,
        "distribution": result.distribution,
        "proportions": [round(x, 6) for x in result.proportions],
        "seed": a.seed,
        "k_max": a.k_max,
        "instances": len(items),
        "left_out": left_out,
        "fit_instances": len(items) - len(result.rows),  # the half that chose the distribution, centroids and K
        "test_instances": len(result.rows),  # the held-out half scored (candidates.jsonl)
        "candidates": n_candidates,
        "best_k": result.best_k,
        "test": result.test.record(),
        "no_cluster": result.no_cluster.record(),
        "all_flagged": result.all_flagged.record() if result.all_flagged else None,
        "spearman": result.spearman,  # ×100, rank labels vs re-annotated labels (Table 2's "Spear.")
        "spearman_no_cluster": result.spearman_no_cluster,
        "best_test_k": result.best_test_k,
        "fit_f1_by_k": result.fit_f1_by_k,
        "test_f1_by_k": result.test_f1_by_k,
    }
    with staged(out) as staging:  # whole or not at all, with a manifest.json of its own (report verifies it)
        (staging / "candidates.jsonl").write_text("".join(json.dumps(r) + "\n" for r in result.rows), encoding="utf-8")
        (staging / "scores.json").write_text(json.dumps(scores, indent=2) + "\n", encoding="utf-8")
        write_manifest(staging)
    print_scores(result, a.embed_model, len(items), n_candidates)
    if any(left_out.values()):  # rows without answers or labels, or with an embedding that cannot be used
        print("  left out: " + ", ".join(f"{n} ({why})" for why, n in left_out.items() if n))
    print(f"results: {out}")
    return 0


def print_scores(result: Any, embed_model: str, instances: int, n_candidates: int) -> None:
    """The scores ×100 as the report shows them, each beside its yardstick: Tu et al.'s Table 2 row, the F1 of
    flagging every held-out instance, and the best K on the held-out half itself."""
    from harness.reporting.error_id import PAPER_F1, PAPER_SPEARMAN

    def prf(s: Any) -> str:
        return f"P {100 * s.precision:.1f}  R {100 * s.recall:.1f}  F1 {100 * s.f1:.1f}"

    def rho(v: float | None) -> str:
        return "–" if v is None else f"{v:.1f}"

    d, t, n, every = result.distribution, result.test, result.no_cluster, result.all_flagged
    paper_nc, paper_f1, paper_k = PAPER_F1[d]
    paper_rho_nc, paper_rho = PAPER_SPEARMAN[d]
    print(f"error identification ({d} distribution, {embed_model}): {instances} instances, scores ×100")
    print(f"  best K (fitting half): {result.best_k}")
    print(f"  held-out half, K={result.best_k}: {prf(t)}  Spearman {rho(result.spearman)}")
    print(f"      Tu et al. Table 2 ({d}, K={paper_k}): F1 {paper_f1}  Spearman {paper_rho}")
    print(f"  held-out half, no cluster: {prf(n)}  Spearman {rho(result.spearman_no_cluster)}")
    print(f"      Tu et al. Table 2 ({d}, no cluster): F1 {paper_nc}  Spearman {paper_rho_nc}")
    print(f"  held-out half, every instance flagged: {prf(every)}  (the F1 any candidate set is read against)")
    best = result.best_test_k
    print(
        f"  best K on the held-out half itself: {best}, F1 {100 * result.test_f1_by_k[best]:.1f} (optimistic: "
        f"chosen on the data it scores; the K above was chosen on the other half)"
    )
    print(f"  candidates: {n_candidates} of {len(result.rows)}")
