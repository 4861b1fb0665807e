"""SmolLM2-135M-Instruct through `run_eval.py reannotate` (hf backend, CPU): how often its replies to Zhang et al.'s
Figure 4 prompt (and Figure 3's, with --rewrite-conditions) are not the JSON asked for.

Synthetic C-STS rows (tests/conftest.py), the cache off, so every number is a fresh measurement. Prints the
status counts and the invalid rate of each setting, and the seconds it took.

    python tests/bench/bench_reannotate_smollm2.py                 # 12 rows, chat and raw (minutes on 2 cores)
    python tests/bench/bench_reannotate_smollm2.py --n 6 --only chat --rewrite-conditions
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from harness.cli.main import main  # noqa: E402
from tests.conftest import write_synthetic_csts  # noqa: E402

SETTINGS = {"chat": ["--chat"], "raw": ["--no-chat"]}


def measure(setting: str, n: int, rewrite: bool, tmp: Path) -> dict[str, object]:
    data = write_synthetic_csts(tmp / "csts", n_val=max(1, (n + 1) // 2))
    out = tmp / setting / "labels.tsv"
    argv = ["reannotate", "--model", "smollm2-135m", *SETTINGS[setting], "--data-dir", str(data)]
    argv += ["--limit", str(n), "--no-cache", "--no-progress", "--out", str(out), "--results-dir", str(tmp)]
    argv += ["--rewrite-conditions"] if rewrite else []
    start = time.perf_counter()
    rc = main(argv)
    seconds = time.perf_counter() - start
    record = json.loads(out.with_name("labels.agreement.json").read_text())
    row: dict[str, object] = {"setting": setting, "rc": rc, "seconds": round(seconds, 1), "ratings": record["ratings"]}
    replies = [json.loads(x) for x in out.with_name("labels.replies.jsonl").read_text().splitlines()]
    row["first_replies"] = [(r["reply"] or "")[:160] for r in replies[:3]]  # what the model wrote, to read
    if rewrite:
        row["conditions"] = {k: v for k, v in record["conditions"].items() if k != "conditions_sha256"}
    return row


def main_bench() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=12, help="synthetic validation rows")
    p.add_argument("--only", default="chat,raw", help="settings, comma-separated: chat, raw")
    p.add_argument("--rewrite-conditions", action="store_true", help="also the Figure 3 step")
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for setting in a.only.split(","):
            row = measure(setting, a.n, a.rewrite_conditions, Path(tmp))
            print(json.dumps(row))


if __name__ == "__main__":
    main_bench()
