"""Runs inside `.venv-vllm` only; every test here is skipped when vLLM cannot be imported.

sys.path hygiene: `python -m pytest` run from the repository root puts the root on sys.path,
where the `kernels/` folder (hkv.kernels' sources) shadows the `kernels` package that
transformers probes for while vllm.config imports it ("No module named 'hkv'" or worse). hkv
itself is installed (editable) in the oracle venv, so the root entry is not needed: drop it
before anything imports transformers.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parents[3]


def _is_root(entry: str) -> bool:
    try:
        return Path(entry or os.getcwd()).resolve() == _ROOT
    except OSError:
        return False


sys.path[:] = [p for p in sys.path if not _is_root(p)]
for _mod in [m for m, v in list(sys.modules.items())
             if m.split(".")[0] == "kernels" and getattr(v, "__file__", None)
             and Path(v.__file__).resolve().is_relative_to(_ROOT)]:
    del sys.modules[_mod]

try:
    import vllm.config  # noqa: F401
    VLLM_ERROR = None
except Exception as err:  # ImportError, or a broken torchvision beside torch 2.13 (pitfall 1)
    VLLM_ERROR = f"{type(err).__name__}: {err}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if VLLM_ERROR is None:
        return
    skip = pytest.mark.skip(reason=f"vLLM not importable ({VLLM_ERROR}); run bash tests/oracle/setup_vllm_env.sh")
    for item in items:
        item.add_marker(skip)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    # Test modules import oracle_bridge (which imports vLLM) at module level: without vLLM,
    # do not even import them.
    if (VLLM_ERROR is not None and collection_path.name.startswith("test_")
            and collection_path.name != "test_vllm_env.py"):
        return True
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def tp1_group():
    """One gloo process group of world size 1: vLLM's parallel layers read the TP rank and size
    (for tests that build vLLM's attention modules on CPU)."""
    from vllm.config import VllmConfig, set_current_vllm_config
    from vllm.distributed import parallel_state as ps
    owned = not ps.model_parallel_is_initialized()
    if owned:
        with set_current_vllm_config(VllmConfig()):
            ps.init_distributed_environment(world_size=1, rank=0, local_rank=0, backend="gloo",
                                            distributed_init_method=f"tcp://127.0.0.1:{_free_port()}")
            ps.initialize_model_parallel(1, 1)
    yield
    if owned:
        ps.destroy_model_parallel()
        ps.destroy_distributed_environment()
