"""tests/conftest.py's share of the cores for each pytest-xdist worker (OMP_NUM_THREADS)."""

from __future__ import annotations

import os

import pytest

from tests.conftest import CALLER_THREADS, _cores, worker_threads


@pytest.mark.parametrize(
    ("environ", "cores", "expected"),
    [
        ({"PYTEST_XDIST_WORKER_COUNT": "4"}, 2, 1),  # -n auto on two cores: one thread each, not two
        ({"PYTEST_XDIST_WORKER_COUNT": "2"}, 8, 4),
        ({"PYTEST_XDIST_WORKER_COUNT": "16"}, 8, 1),  # never 0 (torch would take every core)
        ({"PYTEST_XDIST_WORKER_COUNT": "3"}, 8, 2),
        ({"PYTEST_XDIST_WORKER_COUNT": "1"}, 8, None),  # -n 1: the one worker has every core
        ({}, 8, None),  # no xdist
        ({"PYTEST_XDIST_WORKER_COUNT": "4", "OMP_NUM_THREADS": "3"}, 2, None),  # the caller's choice stands
    ],
)
def test_worker_threads_share_the_cores(environ: dict[str, str], cores: int, expected: int | None) -> None:
    assert worker_threads(environ, cores) == expected


def test_this_workers_torch_computes_on_its_share() -> None:
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers < 2:
        pytest.skip("checks a pytest-xdist worker: run under -n 2 or more")
    torch = pytest.importorskip("torch")
    expected = int(CALLER_THREADS) if CALLER_THREADS is not None else max(1, _cores() // workers)
    assert os.environ["OMP_NUM_THREADS"] == str(expected)
    assert torch.get_num_threads() == expected
