"""What a finished run prints: the metrics line (with notes), reason counts, the strict set, the submission,
and for API runs cache, cost and failed-request warnings (stderr)."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from harness.scoring.metrics import metrics_line, shown

# After these, every metric of harness/scoring/metrics.py METRICS (print_summary).
HEADLINE = ("n", "invalid_pct", "out_of_range_pct", "spearman", "pearson", "spearman_valid", "pearson_valid")
STRICT = ("invalid_strict_pct", "spearman_strict", "pearson_strict")
EXPECTED = ("spearman_expected", "pearson_expected", "expected_mass_mean")


def print_dry_run(m: dict[str, Any]) -> None:
    from harness.calling.estimate import dry_run_cost

    print(
        f"dry run: {m['requests']} requests, {m['prompt_tokens']} prompt tokens ({m['token_count']}), "
        f"at most {m['max_output_tokens']} output tokens; cost at most {dry_run_cost(m)}; no model called"
    )


def print_dry_run_total(estimates: Sequence[Mapping[str, Any]], what: str) -> None:
    """One line under a sweep's or a recipe's dry runs: what all of them would cost together."""
    from harness.calling.estimate import dry_run_cost, dry_run_total

    t = dry_run_total(estimates)
    print(
        f"dry run total ({what}): {t['requests']} requests, {t['prompt_tokens']} prompt tokens, at most "
        f"{t['max_output_tokens']} output tokens; cost at most {dry_run_cost(t)}; no model called"
    )


def print_summary(m: dict[str, Any], model: str | None = None) -> None:
    from harness.calling.backends.offline import BASELINE_NOTES
    from harness.scoring.metrics import METRICS
    from harness.scoring.stats import small_run_note

    print((f"{model}: " if model else "") + metrics_line(m, [*HEADLINE, *METRICS, "errors"]))
    if model in BASELINE_NOTES:
        print(f"note: {BASELINE_NOTES[model]}")
    small = small_run_note(m["n"], m.get("spearman")) if isinstance(m.get("n"), int) else None
    if small is not None:
        print(f"note: {small} (the report, `run_eval.py report RUN`, shows its 95% bootstrap CI)")
    if m.get("reasons"):
        print("reasons: " + "  ".join(f"{k}={v}" for k, v in m["reasons"].items()))
    if isinstance(m.get("repeats"), dict):  # --repeats: how K replies combined, and how far they spread
        print(repeats_line(m["repeats"]))
    if "invalid_strict_pct" in m:
        print("strict parse (not the paper's rule): " + metrics_line(m, STRICT))
    if "spearman_expected" in m:
        print("expected score (from log-probabilities; not the paper's rule): " + metrics_line(m, EXPECTED))
    if "expected_note" in m:
        print(f"note: {m['expected_note']}")
    case: dict[str, Any] = m["case"] if isinstance(m.get("case"), dict) else {}
    if case.get("pooling"):  # --variant case: what was pooled, and the projection's items (case_split.py)
        print(case_line(case))
    if isinstance(case.get("ffn"), dict):
        print(ffn_line(case["ffn"]))
    if "submission" in m:
        print(f"submission: {m['submission']}")
    _report_api(m)


def case_line(case: dict[str, Any]) -> str:
    """--variant case: the pooling done (text: the encoded text's tokens only, Zhang et al. 2025 §3.1) and why it is
    not the one asked for, the encoder's method, whether its vectors came normalised."""
    method = f", the encoder's {case['pooling_method']} pooling" if case.get("pooling_method") else ""
    normalized = case.get("normalized")
    normal = (
        "" if not isinstance(normalized, bool) else ", vectors " + ("normalised" if normalized else "not normalised")
    )
    note = f" ({case['pooling_note']})" if case.get("pooling_note") else ""
    return f"pooling: {case['pooling']}{method}{normal}{note}"


def ffn_line(ffn: dict[str, Any]) -> str:
    """--case-ffn: what the projection learned from and chose its epoch on (never the scored items, unless said)."""
    line = (
        f"ffn: {ffn.get('kind')}, trained on {ffn.get('trained_on')} (n={ffn.get('n_train')}, labels "
        f"{ffn.get('labels')}); epoch {ffn.get('best_epoch')} of {ffn.get('epochs')} chosen on "
        f"{ffn.get('epoch_chosen_on')} (n={ffn.get('n_validation')})"
    )
    return line + (f"; note: {ffn['note']}" if ffn.get("note") else "")


# Tu et al. 2024 §4.1: Spearman ×100 of the cosine of GPT-3.5's answers (text-embedding-ada-002) with the
# re-annotated labels, over the C-STS validation rows with a valid re-annotation.
TU_QA_EMBED = {"spearman": 55.44, "answer_model": "gpt-3.5-turbo-1106", "model": "text-embedding-ada-002", "n": 2620}


def qa_embed_yardstick(config: Any, m: dict[str, Any]) -> str | None:
    """The line printed under a qa-embed run on the re-annotated validation labels: Tu et al.'s 55.44 beside
    ours, and the settings that differ from theirs (None for any other run)."""
    if config.variant != "qa-embed" or config.labels != "reannotated" or config.split != "validation":
        return None
    answers = config.answer_model or config.model
    why = [f"{k}={v} (paper: {TU_QA_EMBED[k]})" for k, v in (("answer_model", answers), ("model", config.model))
           if str(v).lower() != TU_QA_EMBED[k]]  # fmt: skip
    if config.answers is not None:
        why.append(f"answers from {config.answers} (who wrote them is not checked)")
    if config.api.base_urls:
        why.append(f"called {', '.join(config.api.base_urls)}, not the provider's API")
    if m.get("n") != TU_QA_EMBED["n"]:
        why.append(f"n={m.get('n')} (paper: {TU_QA_EMBED['n']:,})")
    verdict = "not comparable: " + "; ".join(why) if why else "comparable"
    ours = m.get("spearman")
    return (
        f"Tu et al. 2024 §4.1: Spearman {TU_QA_EMBED['spearman']} (GPT-3.5's answers, text-embedding-ada-002, "
        f"{TU_QA_EMBED['n']:,} rows); yours: {shown(ours)} ({verdict})"
    )


def _report_api(m: dict) -> None:
    """Cache, cost and failed requests of an API run (nothing for offline runs)."""
    cache, usage, dispatch = m.get("cache"), m.get("usage", {}), m.get("dispatch", {})
    if cache and cache["mode"] != "off":
        served = cache.get("served")
        by = f" (keyed by the model file the server serves: {', '.join(map(str, served))})" if served else ""
        print(f"cache: {cache['hits']} hits, {cache['misses']} misses{by}")
    if usage.get("cost_usd") is not None:
        print(f"tokens: {usage['input_tokens']} in, {usage['output_tokens']} out; cost ${usage['cost_usd']:.4f}")
    if not m.get("errors"):
        return
    steps = [dispatch, m.get("answers", {}).get("dispatch", {})]
    fixed = sum(d.get("deterministic_errors", 0) for d in steps)
    if fixed:
        first = next(e for d in steps for e in d.get("first_deterministic_errors") or [])
        print(
            f"warning: {fixed} requests failed in a way a rerun repeats ({first}); shorten the prompts (fewer "
            "--shots, a shorter --instr) or use a model with a longer context",
            file=sys.stderr,
        )
    unusable = m.get("unusable_embeddings") or {}  # paid for and cached: a rerun reads them the same way
    if unusable:
        said = ", ".join(f"{n} {code}" for code, n in unusable.items())
        print(
            f"warning: {sum(unusable.values())} embeddings the server sent cannot be used ({said}): the queries "
            "that need them have no prediction and no part in the correlations; they are cached as received "
            "(--refresh asks again)",
            file=sys.stderr,
        )
    failed = sum(d.get("errors", 0) for d in steps) - fixed
    if m["errors"] > fixed and (failed > 0 or not unusable):
        first = next((e for d in steps for e in d.get("first_errors") or []), "see samples.jsonl")
        print(
            f"warning: {m['errors'] - fixed} queries have no prediction ({first}); "
            "failed requests are not cached: rerun the same command to retry only those",
            file=sys.stderr,
        )


def repeats_line(r: dict[str, Any]) -> str:
    """--repeats: K, the reducer and temperature, the invalid rate per reply and per item, the items' spread."""

    def pct(v: object) -> str:
        return "–" if v is None else f"{float(v):.1f}%"  # type: ignore[arg-type]

    def num(v: object) -> str:
        return "–" if v is None else f"{float(v):.3f}"  # type: ignore[arg-type]

    return (
        f"repeats: K={r['k']} ({r['reduce']} of the valid replies, temperature {r['temperature']:g}): "
        f"{r['replies']} replies, invalid {pct(r['invalid_replies_pct'])} per reply, "
        f"{pct(r['invalid_items_pct'])} per item; per item sd {num(r['mean_sd'])}, range {num(r['mean_range'])} "
        f"on average, {pct(r['items_disagreeing_pct'])} of items' replies disagree"
    )
