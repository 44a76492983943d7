"""vLLM 0.32's start-up refusals, raised by vLLM's own code for hkv's plans (runs inside .venv-vllm).

Two places in vLLM refuse a configuration before the first request:

* the engine core's memory check: `get_kv_cache_configs` (vllm/v1/core/kv_cache_utils.py l.2531)
  holds back the null block (`check_memory = available - _pool_bytes_per_block`) and calls
  `_check_enough_kv_cache_memory` ("No available memory ..." / "To serve at least one request
  ... the estimated maximum model length is N ..."), whose estimate is
  `_estimate_max_model_len_from_groups`;
* each worker's CUDA graph set-up: `CompilationConfig.resolve_cudagraph_mode_and_sizes`
  (vllm/config/compilation.py l.1369), called by `GPUModelRunner` (v1/worker/gpu_model_runner.py
  l.6851) with the kv_cache_config, max_num_reqs and the least CUDA graph support of the groups'
  backends ("max_num_seqs (N) exceeds available Mamba cache blocks (B) ...").

Both are called here as the engine calls them, on the VllmConfig and per-layer specs
oracle_bridge builds from hkv's per-layer geometry. The CUDA graph mode is CUDA's default,
FULL_AND_PIECEWISE (vllm/config/vllm.py OPTIMIZATION_LEVEL_02/03), or NONE under --enforce-eager
(VllmConfig.__post_init__ l.1691); the oracle process runs on vLLM's CPU platform, which would
otherwise turn graphs off.
"""

from __future__ import annotations

from dataclasses import dataclass

import oracle_bridge as ob
from hkv.model_specs.model_spec import ModelSpec
from vllm.config import CompilationConfig
from vllm.config.compilation import CUDAGraphMode
from vllm.v1.attention.backend import AttentionCGSupport
from vllm.v1.attention.backends.flash_attn import FlashAttentionBackend
from vllm.v1.core import kv_cache_utils
from vllm.v1.kv_cache_interface import KVCacheConfig, MambaSpec, UniformTypeKVCacheSpecs


@dataclass(frozen=True)
class MemoryCheck:
    """What vLLM's engine core decided at `available_bytes`."""

    error: str | None  # the ValueError get_kv_cache_configs raised, else None
    kv_cache_config: KVCacheConfig | None  # when it did not raise
    check_bytes: int  # available less the null block
    needed_bytes: int  # _max_memory_usage_bytes_from_groups at max_model_len
    estimated_max_len: int  # _estimate_max_model_len_from_groups(check_bytes)


def memory_check(model: ModelSpec, sc: ob.Scenario) -> MemoryCheck:
    vc = ob.make_vllm_config(model, sc)
    specs = ob.vllm_specs(model, sc, vc)
    try:
        (kvcfg,) = kv_cache_utils.get_kv_cache_configs(vc, [dict(specs)], [sc.available_bytes])
        error = None
    except ValueError as err:
        kvcfg, error = None, str(err)
    # The pieces the check is made of, on a fresh config (get_kv_cache_groups may unify specs in place).
    vc = ob.make_vllm_config(model, sc)
    groups = kv_cache_utils.get_kv_cache_groups(vc, dict(ob.vllm_specs(model, sc, vc)))
    check = sc.available_bytes - kv_cache_utils._pool_bytes_per_block(vc, groups)
    return MemoryCheck(error, kvcfg, check,
                       kv_cache_utils._max_memory_usage_bytes_from_groups(vc, groups),
                       kv_cache_utils._estimate_max_model_len_from_groups(vc, groups, check))


def least_cudagraph_support(model: ModelSpec, sc: ob.Scenario, kvcfg: KVCacheConfig) -> AttentionCGSupport:
    """GPUModelRunner's min over the groups' backends (FlashAttention for attention, the Mamba
    backend each MambaSpec names)."""
    vc = ob.make_vllm_config(model, sc)
    least = AttentionCGSupport.ALWAYS
    for group in kvcfg.kv_cache_groups:
        spec = group.kv_cache_spec
        head = spec.first_spec if isinstance(spec, UniformTypeKVCacheSpecs) else spec
        backend = head.mamba_type.get_class() if isinstance(head, MambaSpec) else FlashAttentionBackend
        support = backend.get_builder_cls().get_cudagraph_support(vc, spec)
        least = min(least, support, key=lambda s: s.value)
    return least


def cudagraph_check(model: ModelSpec, sc: ob.Scenario, kvcfg: KVCacheConfig, max_num_seqs: int, *,
                    enforce_eager: bool = False) -> str | None:
    """The ValueError resolve_cudagraph_mode_and_sizes raises for this pool, else None."""
    mode = CUDAGraphMode.NONE if enforce_eager else CUDAGraphMode.FULL_AND_PIECEWISE
    cc = CompilationConfig(cudagraph_mode=mode)
    try:
        cc.resolve_cudagraph_mode_and_sizes(
            least_cudagraph_support(model, sc, kvcfg), "FlashAttentionBackend", 1,
            use_v2_model_runner=False, kv_cache_config=kvcfg, max_num_reqs=max_num_seqs, is_profiling=False)
    except ValueError as err:
        return str(err)
    return None
