"""The CASE protocol's cosines in a finished run folder against sentence-transformers' own encode + cos_sim,
recomputed here from the data (the run's texts are rebuilt with harness/variants/case_inputs.py): prints max |Δ|
over a seeded sample of the run's items. Prints numbers only, never C-STS text.

    HF_HUB_OFFLINE=1 python tests/bench/case_agreement.py RUN_DIR [--items 300] [--archive A --password-file P]
        [--encoder DIR]

--encoder: the sentence-transformers folder to compare with when the run's model is no such folder (a run through
an embedding server: llama.cpp's llama-server serving the same weights as a GGUF, docs/embeddings.md).
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import numpy as np


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("run", type=Path)
    p.add_argument("--items", type=int, default=300)
    p.add_argument("--archive", type=Path)
    p.add_argument("--password-file", type=Path)
    p.add_argument("--encoder", default=None, help="sentence-transformers folder (default: the run's --model)")
    a = p.parse_args()
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.util import cos_sim

    from harness.datasets.choose import load_dataset
    from harness.variants.case_inputs import sides, vector_texts

    config = json.loads((a.run / "config.json").read_text())
    samples = {s["id"]: s for s in map(json.loads, (a.run / "samples.jsonl").read_text().splitlines())}
    case = config["case"]
    dataset = load_dataset(config["dataset"], config["split"], None, a.archive, a.password_file)
    items = [e for e in dataset.examples if e.id in samples and samples[e.id]["prediction"] is not None]
    items = random.Random(0).sample(items, min(a.items, len(items)))
    prefixes = {
        x: t.prefix(x) for e in items for t in sides(e, case["inputs"]) for x in vector_texts(t, case["setting"]) if x
    }
    texts = sorted(prefixes)
    encoder = SentenceTransformer(a.encoder or config["model"], device="cpu")
    vectors = dict(zip(texts, encoder.encode(texts, batch_size=64, convert_to_numpy=True), strict=True))
    if case.get("pooling") == "text":  # --case-pooling text: the instruction as encode()'s prompt, left out of pooling
        encoder.set_pooling_include_prompt(False)
        for x, n in prefixes.items():
            if n:
                vectors[x] = encoder.encode([x[n:]], prompt=x[:n], convert_to_numpy=True)[0]
    deltas = []
    for e in items:
        pair = []
        for t in sides(e, case["inputs"]):
            main_text, minus = vector_texts(t, case["setting"])
            pair.append(vectors[main_text] - vectors[minus] if minus else vectors[main_text])
        deltas.append(abs(float(cos_sim(pair[0], pair[1])[0, 0]) - samples[e.id]["prediction"]))
    print(f"setting={case['setting']} inputs={case['inputs']} items={len(items)} texts={len(texts)} "
          f"max|delta|={max(deltas):.3g} mean|delta|={float(np.mean(deltas)):.3g}")  # fmt: skip


if __name__ == "__main__":
    main()
