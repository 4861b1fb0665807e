"""One lm-evaluation-harness run for tests/bench/bench_vs_lmeval.py; runs inside the lm-eval venv (lmeval_env.py).

    <lm-eval venv>/bin/python tests/bench/lmeval_driver.py '{"url": ..., "prompts": ..., "concurrency": 64}'

lm-eval's `local-chat-completions` model (LocalChatCompletion) driven directly, as its evaluator would drive it
for a generate_until task: one Instance per prompt, the prompt as one user message (what `apply_chat_template`
gives without a tokenizer), max_gen_toks 20, temperature 0, no stop sequences, no response cache (the model's
cache hook is off unless the evaluator wraps it), its own retry policy (max_retries, default 3). Wall and process
CPU time are measured around `generate_until` only. Prints one JSON line. Imports nothing from this repository.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any


def main() -> None:
    spec: dict[str, Any] = json.loads(sys.argv[1])
    with open(spec["prompts"]) as f:
        prompts: list[str] = json.load(f)
    logging.getLogger("lm_eval").setLevel(logging.ERROR)  # its per-request warnings and info lines, not timed
    from lm_eval.api.instance import Instance
    from lm_eval.models.openai_completions import LocalChatCompletion

    args: dict[str, Any] = {"max_retries": spec["max_retries"]} if spec.get("max_retries") else {}
    lm = LocalChatCompletion(
        base_url=spec["url"].rstrip("/") + "/chat/completions",
        model="bench-model",
        num_concurrent=spec["concurrency"],
        max_gen_toks=20,
        tokenizer_backend=None,
        tokenized_requests=False,
        timeout=120,
        **args,
    )
    gen_kwargs = {"until": [], "max_gen_toks": 20, "temperature": 0, "do_sample": False}
    instances = [
        Instance(
            "generate_until",
            doc={},
            arguments=(lm.apply_chat_template([{"role": "user", "content": p}]), dict(gen_kwargs)),
            idx=0,
            metadata=("bench", i, 1),
        )
        for i, p in enumerate(prompts)
    ]
    error = None
    outputs: list[str] = []
    cpu0, t0 = time.process_time(), time.perf_counter()
    try:
        outputs = lm.generate_until(instances, disable_tqdm=True)
    except BaseException as e:
        error = f"{type(e).__name__}: {e}"[:300]
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    answered = sum(1 for o in outputs if isinstance(o, str) and o.strip())
    print(json.dumps({"n": len(prompts), "answered": answered, "wall": wall, "cpu": cpu, "error": error}))


if __name__ == "__main__":
    main()
