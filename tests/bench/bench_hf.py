"""Benchmark the hf backend: prompts/s, peak memory and batch-size scaling on a randomly initialised model.

    python tests/bench/bench_hf.py                      # Flan-T5-small-shaped, 48 prompts, batch 1/4/16
    python tests/bench/bench_hf.py --shape t5-xl --n 2834 --batch-sizes 16 32 64   # on a GPU

Prompts are C-STS validation k=4 long-instruction prompts in the T5 layout, rendered in memory from the
shared encrypted release when it is there (nothing is written), else synthetic ones of the same length.
The tokenizer is a byte-level BPE trained on the bundled STS-B text, so token counts are realistic.
Each batch size runs in its own process so its peak memory is its own. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from harness.config.settings import LocalOptions  # noqa: E402
from harness.types import Request  # noqa: E402

SHARED = Path(os.environ.get("CSTS_SHARED_DIR", ROOT.parent / "shared"))
ARCHIVE, PASSWORD = SHARED / "data/csts/csts.tar.enc", SHARED / "data/csts/PASSWORD"

SHAPES = {  # (d_model, d_ff, layers, heads, d_kv): Flan-T5 configs, gated-gelu, vocab 32128
    "t5-small": (512, 1024, 8, 6, 64),
    "t5-base": (768, 2048, 12, 12, 64),
    "t5-xl": (2048, 5120, 24, 32, 64),
}


def prompts(n: int) -> tuple[list[Request], str]:
    """n C-STS k=4 long prompts (T5 layout), real when the shared release is present, else synthetic."""
    from harness.config.settings import RunConfig
    from harness.runner import prepare

    if ARCHIVE.is_file():
        config = RunConfig(model="bench", shots=4, template="t5-long", archive=ARCHIVE, password_file=PASSWORD)
        requests = list(prepare(config).requests)
        while len(requests) < n:  # more than the split holds: go round again
            requests += [Request(f"{r.id}-{len(requests)}", r.prompt) for r in requests]
        return requests[:n], "real C-STS validation (in memory)"
    from tests.conftest import write_synthetic_csts

    with tempfile.TemporaryDirectory() as d:
        data = write_synthetic_csts(Path(d), n_train=200, n_val=(n + 1) // 2)
        config = RunConfig(model="bench", shots=4, template="t5-long", data_dir=data, limit=n)
        return list(prepare(config).requests), "synthetic"


def build(directory: Path, shape: str) -> int:
    """Save a randomly initialised T5 of the given shape and an STS-B-trained tokenizer; returns its parameter count."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast, T5Config, T5ForConditionalGeneration

    from harness.datasets.choose import load_dataset

    text = [f"{e.sentence1} {e.sentence2}" for e in load_dataset("stsb", "train").examples]
    text += ["Input: Sentence 1: Sentence 2: Condition: Output: Definition: Evaluate the similarity"] * 50
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=8000, special_tokens=["<pad>", "</s>", "<unk>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(text, trainer)
    tok.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", eos_token="</s>", unk_token="<unk>"
    ).save_pretrained(directory)
    d_model, d_ff, layers, heads, d_kv = SHAPES[shape]
    config = T5Config(
        vocab_size=32128,
        d_model=d_model,
        d_ff=d_ff,
        d_kv=d_kv,
        num_layers=layers,
        num_decoder_layers=layers,
        num_heads=heads,
        feed_forward_proj="gated-gelu",
        tie_word_embeddings=False,  # Flan-T5 has its own head; transformers 5 ties it anyway when built from config
        pad_token_id=0,
        eos_token_id=1,
        decoder_start_token_id=0,
    )
    torch.manual_seed(0)
    model = T5ForConditionalGeneration(config)
    model.save_pretrained(directory)
    return sum(p.numel() for p in model.parameters())


def one(model_dir: str, n: int, batch_size: int, dtype: str) -> dict[str, object]:
    """Run the hf backend over n prompts at one batch size (this process only); time and memory."""
    import torch

    from harness.calling.backends.hf import HFBackend

    requests, _ = prompts(n)
    backend = HFBackend(model_dir, LocalOptions(batch_size=batch_size, dtype=dtype))
    lm = backend.load()
    lengths = [len(it.ids) for it in backend.tokenize(requests)]

    async def run(reqs: list[Request]) -> list:
        return [c async for c in backend.complete(reqs)]

    asyncio.run(run(requests[:batch_size]))  # warm-up: first-call allocations and kernel choices
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    start, cpu_start = time.perf_counter(), time.process_time()
    done = asyncio.run(run(requests))
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    return {
        "batch_size": batch_size,
        "prompts": len(done),
        "errors": sum(c.error is not None for c in done),
        "seconds": round(seconds, 2),
        "cpu_seconds": round(cpu_seconds, 1),  # all threads: steadier than wall time on a shared machine
        "prompts_per_s": round(len(done) / seconds, 2),
        "new_tokens_per_s": round(sum(c.usage.output_tokens for c in done) / seconds, 1),
        "mean_prompt_tokens": round(sum(lengths) / len(lengths), 1),
        "max_prompt_tokens": max(lengths),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "peak_gpu_mib": round(torch.cuda.max_memory_allocated() / 2**20) if torch.cuda.is_available() else None,
        "device": str(lm.device),
        "threads": torch.get_num_threads(),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shape", default="t5-small", choices=sorted(SHAPES))
    p.add_argument("--n", type=int, default=48, help="prompts per batch size (C-STS validation has 2,834)")
    p.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 4, 16])
    p.add_argument("--dtype", default="float32")
    p.add_argument("--one", nargs=3, metavar=("MODEL_DIR", "N", "BATCH"), help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.one:
        print(json.dumps(one(a.one[0], int(a.one[1]), int(a.one[2]), a.dtype)))
        return
    _, source = prompts(1)
    with tempfile.TemporaryDirectory() as d:
        params = build(Path(d), a.shape)
        print(f"model: randomly initialised {a.shape}-shaped T5, {params / 1e6:.1f}M parameters, dtype {a.dtype}")
        print(f"prompts: {a.n} C-STS k=4 long, T5 layout, {source}; 20 new tokens each (greedy)")
        header = f"{'batch':>5} {'prompts/s':>9} {'new tok/s':>9} {'seconds':>8} {'CPU s':>7} {'prompt tok':>10}"
        print(header + f" {'peak RSS MiB':>12} {'peak GPU MiB':>12} {'errors':>6}")
        for bs in a.batch_sizes:
            cmd = [sys.executable, __file__, "--one", d, str(a.n), str(bs), "--dtype", a.dtype]
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
            r = json.loads(out)
            print(
                f"{r['batch_size']:>5} {r['prompts_per_s']:>9} {r['new_tokens_per_s']:>9} {r['seconds']:>8} "
                f"{r['cpu_seconds']:>7} {r['mean_prompt_tokens']:>10} {r['peak_rss_mib']:>12} "
                f"{r['peak_gpu_mib']!s:>12} {r['errors']:>6}"
            )
        print(f"device: {r['device']}, torch threads: {r['threads']}, max prompt tokens: {r['max_prompt_tokens']}")
        print(f"load average (other work on this machine skews wall times): {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
