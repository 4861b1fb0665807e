"""Per-stage CPU cost of the harness itself on all 2,834 C-STS validation queries at k = 4.

Run: python tests/bench/bench_core.py [--archive csts.tar.enc --password-file PASSWORD] [--repeat 5]
Without the archive it uses ../shared's when present. Prints the best of --repeat runs per stage
(CPU seconds, process_time), so a noisy shared machine inflates nothing but the worst runs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

T0 = time.process_time()
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harness.calling.backends.offline import OverlapScorer  # noqa: E402
from harness.datasets.choose import load_dataset  # noqa: E402
from harness.prompting.fewshot import ShotPicker  # noqa: E402
from harness.prompting.render import PromptRenderer, template_name  # noqa: E402
from harness.scoring.metrics import compute_metrics  # noqa: E402
from harness.scoring.parsing import fallback_score, parse_score  # noqa: E402
from harness.types import Request, Scored  # noqa: E402

IMPORT_S = time.process_time() - T0
SHARED = Path(os.environ.get("CSTS_SHARED_DIR", Path(__file__).resolve().parents[3] / "shared")) / "data" / "csts"


def one_pass(archive: Path, password: Path, k: int) -> dict[str, float]:
    """Times of each stage for one full pass; returns CPU seconds per stage."""
    t: dict[str, float] = {}
    c = time.process_time()
    ds = load_dataset("csts", "validation", archive=archive, password_file=password)
    t["load (decrypt + parse CSV)"] = time.process_time() - c

    c = time.process_time()
    picker = ShotPicker("csts", ds.pool, seed=0, paired=True)
    shots = [picker.pick(q, k) for q in ds.examples]
    t["shot selection"] = time.process_time() - c

    c = time.process_time()
    renderer = PromptRenderer(template_name("csts", "long"))
    requests = [Request(q.id, renderer.render(q, s)) for q, s in zip(ds.examples, shots, strict=True)]
    t["render prompts"] = time.process_time() - c

    backend = OverlapScorer(label_range=ds.label_range)

    async def collect() -> dict[str, str | None]:
        return {comp.request_id: comp.text async for comp in backend.complete(requests)}

    c = time.process_time()
    texts = asyncio.run(collect())
    t["(offline overlap scorer answers)"] = time.process_time() - c

    c = time.process_time()
    scored = []
    for q, s, r in zip(ds.examples, shots, requests, strict=True):
        parsed = parse_score(texts[r.id])
        pred = parsed if parsed is not None else fallback_score(0, q.id, ds.label_range)
        scored.append(
            Scored(
                id=q.id,
                prompt=r.prompt,
                shot_ids=tuple(x.id for x in s),
                output=texts[r.id],
                parsed=parsed,
                valid=parsed is not None,
                prediction=pred,
                label=q.label,
            )
        )
    t["parse + fallback"] = time.process_time() - c

    c = time.process_time()
    metrics = compute_metrics(scored, ds.label_range)
    t["metrics"] = time.process_time() - c
    assert metrics["n"] == len(ds.examples) == 2834, metrics["n"]
    return t


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--archive", type=Path, default=SHARED / "csts.tar.enc")
    p.add_argument("--password-file", type=Path, default=SHARED / "PASSWORD")
    p.add_argument("--shots", type=int, default=4)
    p.add_argument("--repeat", type=int, default=5)
    a = p.parse_args()
    if not a.archive.is_file():
        sys.exit(f"no C-STS archive at {a.archive}: pass --archive and --password-file")
    runs = [one_pass(a.archive, a.password_file, a.shots) for _ in range(a.repeat)]
    print(f"C-STS validation, 2834 queries, k={a.shots}, long instructions; best of {a.repeat} (CPU seconds)")
    print(f"  {'import harness (once)':34s} {IMPORT_S:8.3f}")
    total = 0.0
    for stage in runs[0]:
        best = min(r[stage] for r in runs)
        worst = max(r[stage] for r in runs)
        if not stage.startswith("("):
            total += best
        print(f"  {stage:34s} {best:8.3f}   (worst {worst:.3f})")
    print(f"  {'harness total (excl. scorer)':34s} {total:8.3f}")


if __name__ == "__main__":
    main()
