"""hkv's attention backend table (planner/attention_backend.py) against vLLM 0.32's own code.

Runs in `.venv-vllm` (the CPU build). Backend classes that import without CUDA are asked directly
(`get_supported_kernel_block_sizes`, `get_preferred_block_size`, `supports_block_size`); the CUDA
priority lists come from vLLM's `_get_backend_priorities`, compiled from platforms/cuda.py's source
(the module itself needs CUDA libraries to import).
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest
import vllm.platforms
from vllm.model_executor.layers.attention.attention import _largest_kernel_block_within
from vllm.platforms.interface import DeviceCapability
from vllm.v1.attention.backends.registry import AttentionBackendEnum

from hkv.planner import attention_backend as ab

# hkv's backends whose vLLM class imports on the CPU build (the others need flashinfer or CUDA).
IMPORTABLE = (ab.FLASH_ATTN, ab.TRITON_ATTN, ab.FLASHMLA, ab.TRITON_MLA, ab.CPU_ATTN, ab.CPU_MLA)
BLOCK_SIZES = (8, 16, 24, 32, 48, 64, 96, 128, 256)


@pytest.mark.parametrize("backend", IMPORTABLE, ids=lambda b: b.name)
def test_kernel_block_sizes_match_vllm(backend):
    cls = AttentionBackendEnum[backend.name].get_class()
    assert cls.get_preferred_block_size(16) == backend.blocks.preferred(16)
    assert [b for b in BLOCK_SIZES if cls.supports_block_size(b)] == [
        b for b in BLOCK_SIZES if backend.blocks.accepts(b)]


def _vllm_backend_priorities():
    """vLLM's _get_backend_priorities, compiled from its source without importing platforms/cuda.py."""
    source = Path(vllm.platforms.__file__).with_name("cuda.py").read_text()
    fn = next(node for node in ast.parse(source).body
              if isinstance(node, ast.FunctionDef) and node.name == "_get_backend_priorities")
    fn.decorator_list = []  # functools.cache: not needed here
    namespace = {"AttentionBackendEnum": AttentionBackendEnum, "DeviceCapability": DeviceCapability,
                 "CacheDType": str, "__name__": "vllm_cuda_priorities"}
    exec(compile(ast.Module(body=[fn], type_ignores=[]), "cuda.py", "exec"), namespace)
    return namespace["_get_backend_priorities"]


@pytest.mark.parametrize("mla", [False, True])
@pytest.mark.parametrize("capability", [(7, 5), (8, 0), (8, 9), (9, 0), (10, 0), (12, 0), (12, 1)])
def test_cuda_priorities_match_vllm(mla, capability):
    """hkv's order is vLLM's, less the backends hkv leaves out (sparse MLA, TOKENSPEED_MLA,
    FLEX_ATTENTION, TURBOQUANT, the mm-prefix Triton variants)."""
    priorities = _vllm_backend_priorities()
    assert "kv_cache_dtype" in inspect.signature(priorities).parameters
    vllm_order = [b.name for b in priorities(use_mla=mla, device_capability=DeviceCapability(*capability),
                                             kv_cache_dtype="auto", head_size=576 if mla else 128)]
    hkv_order = [b.name for b in ab.CUDA_PRIORITIES.get((mla, capability[0]), ab.CUDA_PRIORITIES[(mla, None)])]
    assert [name for name in vllm_order if name in hkv_order] == hkv_order


def test_cpu_attn_gives_sliding_layers_32_when_told_16():
    """Why 16 cannot run on CPU: a sliding-window layer picks the largest kernel block within
    16 tokens' page, and CPU_ATTN has none, so it takes 32 while full attention keeps 16."""
    cpu_attn = AttentionBackendEnum.CPU_ATTN.get_class()
    per_token = 1024
    assert _largest_kernel_block_within(cpu_attn, per_token, 16 * per_token, 16) == 32
    assert _largest_kernel_block_within(cpu_attn, per_token, 32 * per_token, 32) == 32
    assert not ab.CPU_ATTN.blocks.accepts(16) and ab.CPU_ATTN.blocks.accepts(32)
