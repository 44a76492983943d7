"""Block-outermost (packed) layouts against vLLM: the stub config and the comparison both the
DeepSeek-V4 and dots3 oracle tests use."""

from __future__ import annotations

from hkv.model_specs.cache_options import CacheOptions
from hkv.model_specs.model_spec import ModelSpec
from hkv.planner.plan import plan
from hkv.planner.plan_config import PlanConfig
from vllm.config import VllmConfig
from vllm.v1.core import kv_cache_utils
from vllm.v1.core.kv_cache_utils import (
    get_kv_cache_config_from_groups,
    get_kv_cache_groups,
    get_max_concurrency_for_kv_cache_config,
)
from vllm.v1.kv_cache_interface import KVCacheSpec, UniformTypeKVCacheSpecs


def packed_vllm_config(max_model_len: int, mnbt: int, *, block_size: int, cache_dtype: str,
                       hybrid: bool = True) -> VllmConfig:
    """What get_kv_cache_groups and the capacity functions read, in the BLHNC layout the model's
    backends declare."""
    vc = VllmConfig()

    class _Model:
        pass
    _Model.max_model_len = max_model_len
    vc.model_config = _Model()  # type: ignore[assignment]
    cc = vc.cache_config
    cc.block_size, cc.cache_dtype, cc.kv_cache_layout = block_size, cache_dtype, "BLHNC"
    cc.enable_prefix_caching, cc.num_gpu_blocks_override = True, None
    sc = vc.scheduler_config
    sc.max_num_batched_tokens, sc.async_scheduling, sc.disable_hybrid_kv_cache_manager = mnbt, True, not hybrid
    return vc


def assert_vllm_layout_equals(model: ModelSpec, vc: VllmConfig, specs: dict[str, KVCacheSpec],
                              available: int, *, block_size: int | None = None) -> None:
    """hkv's `vllm` layout (at `block_size`, None: the plan's own) has vLLM's groups (members in
    order, block size, each member's page), bytes per block, num_blocks and concurrency."""
    max_model_len = vc.model_config.max_model_len
    assert [layer.name for layer in model.cache_layers] == list(specs)
    groups = get_kv_cache_groups(vc, dict(specs))
    kvcfg = get_kv_cache_config_from_groups(vc, groups, available)
    cfg = PlanConfig(gpu="h100", available_kv_memory_bytes=available, max_model_len=max_model_len,
                     max_num_batched_tokens=vc.scheduler_config.max_num_batched_tokens, primary_layout="vllm",
                     block_size=block_size)
    layout = plan(model, cfg).reports["vllm"].layout
    by_name = {layer.name: layer.cache_spec(CacheOptions()) for layer in model.cache_layers}
    ours = [(g.layer_names, g.block_size, tuple(by_name[n].page_size_bytes(g.block_size) for n in g.layer_names))
            for g in layout.groups]
    theirs = []
    for g in groups:
        spec = g.kv_cache_spec
        assert isinstance(spec, UniformTypeKVCacheSpecs)
        theirs.append((tuple(g.layer_names), spec.block_size,
                       tuple(spec.kv_cache_specs[n].page_size_bytes for n in g.layer_names)))
    assert ours == theirs
    (pool,) = layout.pools
    assert pool.bytes_per_block == kv_cache_utils._pool_bytes_per_block(vc, groups)
    assert pool.num_blocks == kvcfg.num_blocks
    assert layout.max_concurrency(max_model_len) == get_max_concurrency_for_kv_cache_config(vc, kvcfg)
