"""--data-parallel N for the offline vllm backend: vLLM's own offline data parallelism, one process per rank.

vLLM 0.32 refuses `LLM(data_parallel_size=N)` in one process ("not supported for single-process usage and may
hang") and points to its multi-process example, examples/features/data_parallel/data_parallel_offline.py: each
rank is a process of its own that sets VLLM_DP_RANK, VLLM_DP_RANK_LOCAL, VLLM_DP_SIZE, VLLM_DP_MASTER_IP and
VLLM_DP_MASTER_PORT, builds its own `vllm.LLM` and generates its contiguous part of the prompts (the example's
even split, the first `n % N` ranks one prompt longer; a rank with none gets a placeholder prompt). That is what
runs here, each rank through the backend's own `complete` (one call for its part), the completions merged back in
request order. vLLM coordinates the ranks only for mixture-of-experts models (their experts are exchanged every
step); a dense model's ranks it runs as independent engines ("Non-MoE DP ranks are completely independent",
vllm/v1/engine/core.py) and it refuses the variables for them ("Offline data parallel mode is not
supported/useful for dense models", vllm/config/parallel.py). So a dense model's ranks get no VLLM_DP_* variables
and each is given its own GPUs through CUDA_VISIBLE_DEVICES, as the example's first version did; a rank with no
prompts is not started. Which kind a model is, vLLM's own ModelConfig says (`is_moe`).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from typing import Any

from harness.types import Completion, HarnessError, Request

PLACEHOLDER = Request("vllm-dp-placeholder", "Placeholder", max_tokens=1)  # the example's prompt for an idle rank
JOIN_S = 120.0  # after its answers, a rank shuts its engine down; one still alive then is stopped


def parts(n: int, size: int) -> list[tuple[int, int]]:
    """[start, end) of each rank's prompts: vLLM's example's split (contiguous, sizes differing by at most one)."""
    floor, rest = divmod(n, size)

    def start(rank: int) -> int:
        return rank * floor + min(rank, rest)

    return [(start(rank), start(rank + 1)) for rank in range(size)]


def rank_env(
    rank: int, size: int, moe: bool, master: tuple[str, int], devices: list[str] | None, per_rank: int
) -> dict[str, str]:
    """The environment one rank's process sets before it builds its engine.

    `devices`: the GPUs the run may use (CUDA_VISIBLE_DEVICES as given; None: all, or a CPU run where there are
    none to hand out); `per_rank`: GPUs one copy of the model takes (--tensor-parallel).
    """
    if moe:  # vLLM's example: vLLM connects the ranks and gives each its GPUs itself
        ip, port = master
        names = ("VLLM_DP_RANK", "VLLM_DP_RANK_LOCAL", "VLLM_DP_SIZE", "VLLM_DP_MASTER_IP", "VLLM_DP_MASTER_PORT")
        return dict(zip(names, (str(rank), str(rank), str(size), ip, str(port)), strict=True))
    if devices is None:
        return {}
    mine = devices[rank * per_rank : (rank + 1) * per_rank]
    if len(mine) < per_rank:
        raise HarnessError(
            f"--data-parallel {size} with --tensor-parallel {per_rank} needs {size * per_rank} GPUs; "
            f"CUDA_VISIBLE_DEVICES has {len(devices)}"
        )
    return {"CUDA_VISIBLE_DEVICES": ",".join(mine)}


def _rank_main(
    conn: Any, env: dict[str, str], make: Any, backend_args: dict[str, Any], requests: list[Request]
) -> None:
    """One rank (a spawned process): its engine (`make`: the backend's class, VllmBackend), its part in one call,
    the completions sent back."""
    os.environ.update(env)
    try:
        backend = make(**backend_args)

        async def collect() -> list[Completion]:
            return [c async for c in backend.complete(requests)]

        conn.send(("ok", asyncio.run(collect())))
    except Exception as e:  # told to the parent as one line; the traceback stays on this rank's stderr
        conn.send(("error", str(e) if isinstance(e, HarnessError) else f"{type(e).__name__}: {e}"))
        raise
    finally:
        conn.close()


def plan_ranks(engine_args: dict[str, Any], size: int) -> tuple[bool, list[str] | None, tuple[str, int]]:
    """Whether vLLM coordinates the ranks (a mixture-of-experts model), the GPUs to hand out, the master address."""
    import vllm
    from vllm.platforms import current_platform
    from vllm.utils.network_utils import get_open_port

    moe = bool(vllm.EngineArgs(**engine_args).create_model_config().is_moe)
    if current_platform.is_cpu():
        devices = None
    elif os.environ.get("CUDA_VISIBLE_DEVICES"):
        devices = os.environ["CUDA_VISIBLE_DEVICES"].split(",")
    else:
        import torch

        devices = [str(i) for i in range(torch.cuda.device_count())]
    return moe, devices, ("127.0.0.1", get_open_port() if moe else 0)


async def complete_ranks(backend: Any, requests: Sequence[Request]) -> AsyncIterator[Completion]:
    """`backend` (a VllmBackend with options.data_parallel = N > 1) over N rank processes; completions in order."""
    size = backend.options.data_parallel
    moe, devices, master = plan_ranks(backend.engine_args(), size)
    args = {
        "model": backend.model, "options": replace(backend.options, data_parallel=1), "seed": backend.seed,
        "llm_factory": backend._llm_factory, "sampling_params": backend._sampling_params,
        "expected": backend.expected, "chat": backend.chat, "thinking": backend.thinking,
        "constrain": backend.constrain, "choice_params": backend._choice_params,
    }  # fmt: skip
    ctx = multiprocessing.get_context("spawn")  # a fresh interpreter: vLLM and torch are not fork-safe
    ranks: list[tuple[int, Any, Any]] = []
    answered = False
    try:
        for rank, (a, b) in enumerate(parts(len(requests), size)):
            part = list(requests[a:b]) or ([PLACEHOLDER] if moe else [])
            if not part:
                continue
            env = rank_env(rank, size, moe, master, devices, backend.options.tensor_parallel)
            receive, send = ctx.Pipe(duplex=False)
            work = (send, env, type(backend), args, part)
            process = ctx.Process(target=_rank_main, args=work, name=f"vllm-dp-rank-{rank}")
            process.start()
            send.close()
            ranks.append((rank, process, receive))
        for rank, process, receive in ranks:
            try:
                status, payload = await asyncio.to_thread(receive.recv)
            except EOFError:
                await asyncio.to_thread(process.join)
                code = process.exitcode
                raise HarnessError(f"vllm data-parallel rank {rank} exited ({code}) before answering") from None
            if status != "ok":
                raise HarnessError(f"vllm data-parallel rank {rank}: {payload}")
            for completion in payload:
                if completion.request_id != PLACEHOLDER.id:
                    yield completion
        answered = True
    finally:  # a rank that failed, or a run stopped: the other ranks are stopped at once
        for _, process, receive in ranks:
            receive.close()
            await asyncio.to_thread(process.join, JOIN_S if answered else 0)
            if process.is_alive():
                process.terminate()
                await asyncio.to_thread(process.join)
