"""Kernel tests run the Triton kernels in the CPU interpreter unless TRITON_INTERPRET is set otherwise.

TRITON_INTERPRET must be in the environment before any `@triton.jit` decorator runs, and pytest imports
this file before the test modules, which import the kernel modules only after it. With
TRITON_INTERPRET=0 on a CUDA machine the same tests run the compiled kernels on the GPU.
"""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest  # noqa: E402
import torch  # noqa: E402

INTERPRETED = os.environ["TRITON_INTERPRET"] == "1"


@pytest.fixture(scope="session")
def device() -> torch.device:
    """Where the Triton kernels can run: CPU under the interpreter, else CUDA (skip when absent)."""
    if INTERPRETED:
        return torch.device("cpu")
    if not torch.cuda.is_available():
        pytest.skip("TRITON_INTERPRET=0 and no CUDA device: compiled Triton kernels cannot run")
    return torch.device("cuda")
