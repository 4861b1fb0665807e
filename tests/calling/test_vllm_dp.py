"""--data-parallel N (harness/calling/backends/vllm_dp.py): how the prompts are split over vLLM's ranks and what each
rank's process is told, without vLLM. The ranks themselves, on the real engine: tests/calling/test_vllm_dp_real.py.
"""

from __future__ import annotations

import pytest

from harness.calling.backends.vllm_dp import parts, rank_env
from harness.types import HarnessError


@pytest.mark.parametrize(
    ("n", "size", "expected"),
    [
        (200, 2, [(0, 100), (100, 200)]),
        (5, 2, [(0, 3), (3, 5)]),  # vLLM's example: the first n % size ranks take one more
        (7, 3, [(0, 3), (3, 5), (5, 7)]),
        (1, 2, [(0, 1), (1, 1)]),  # the second rank has nothing (a placeholder for MoE, not started for dense)
    ],
)
def test_each_rank_takes_a_contiguous_even_part(n: int, size: int, expected: list[tuple[int, int]]) -> None:
    assert parts(n, size) == expected


def test_a_moe_model_s_ranks_get_vllm_s_data_parallel_variables() -> None:
    env = rank_env(1, 2, True, ("127.0.0.1", 29555), ["0", "1"], 1)
    assert env == {
        "VLLM_DP_RANK": "1",
        "VLLM_DP_RANK_LOCAL": "1",
        "VLLM_DP_SIZE": "2",
        "VLLM_DP_MASTER_IP": "127.0.0.1",
        "VLLM_DP_MASTER_PORT": "29555",
    }


def test_a_dense_model_s_ranks_are_independent_engines_on_their_own_gpus() -> None:
    # vLLM refuses VLLM_DP_SIZE > 1 for a dense model: each rank is told only its GPUs (--tensor-parallel 2 here).
    devices = ["4", "5", "6", "7"]
    assert rank_env(0, 2, False, ("127.0.0.1", 0), devices, 2) == {"CUDA_VISIBLE_DEVICES": "4,5"}
    assert rank_env(1, 2, False, ("127.0.0.1", 0), devices, 2) == {"CUDA_VISIBLE_DEVICES": "6,7"}
    assert rank_env(1, 2, False, ("127.0.0.1", 0), None, 1) == {}  # CPU: no GPUs to hand out


def test_too_few_gpus_for_the_ranks_is_one_clear_error() -> None:
    with pytest.raises(HarnessError, match="--data-parallel 2 with --tensor-parallel 2 needs 4 GPUs; .* has 3"):
        rank_env(1, 2, False, ("127.0.0.1", 0), ["0", "1", "2"], 2)
