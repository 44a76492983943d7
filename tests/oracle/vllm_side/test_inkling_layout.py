"""Inkling's two sliding specs with different block sizes against vLLM 0.32's own planning.

The conv-state specs come from vLLM's own `InklingConvState` (its packed head width and block
size), the attention specs as `InklingAttention.get_kv_cache_spec` builds them
(vllm/models/inkling/nvidia/attention.py: the cache block size, the local or global geometry).
The geometry is read from transformers' default inkling_text config here, not from hkv. vLLM then
groups, unifies pages, sizes the pool and resolves the scheduler and hash block sizes; hkv's
`vllm` layout and its runtime coordinator must agree with every figure.
"""

from __future__ import annotations

import json
from pathlib import Path
from unittest import mock

import pytest
import torch

import oracle_bridge as ob
from vllm.config import set_current_vllm_config
from vllm.models.inkling.nvidia import sconv_swa_attn
from vllm.v1.core.kv_cache_utils import (
    get_kv_cache_config_from_groups,
    get_kv_cache_groups,
    get_max_concurrency_for_kv_cache_config,
    resolve_cache_hit_alignment_tokens,
    resolve_kv_cache_block_sizes,
)
from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheSpec, SlidingWindowSpec

from hkv.model_specs.from_hf_config import from_hf_config
from hkv.planner.errors import LayoutUnavailableError

CONFIG = json.loads((Path(__file__).resolve().parents[2] / "data" / "configs" / "inkling_text.json").read_text())
GIB = 2**30
SCENARIOS = [ob.Scenario(40 * GIB + 4321, 32768, 8192), ob.Scenario(7 * GIB, 8192, 2048),
             ob.Scenario(12 * GIB, 16384, 4096, enable_prefix_caching=False),
             ob.Scenario(9 * GIB + 5, 16384, 4096, kv_cache_dtype="fp8")]


def _vllm_specs(vc) -> dict[str, KVCacheSpec]:
    bs = vc.cache_config.block_size
    # InklingAttention caches at kv_cache_dtype_str_to_dtype(cache_dtype); the conv state stays bf16.
    kv_dtype = torch.float8_e4m3fn if vc.cache_config.cache_dtype == "fp8" else torch.bfloat16
    out: dict[str, KVCacheSpec] = {}
    hidden = CONFIG["hidden_size"]
    with set_current_vllm_config(vc), mock.patch.object(sconv_swa_attn, "get_tensor_model_parallel_world_size",
                                                         return_value=1):
        for idx, layer_type in enumerate(CONFIG["layer_types"]):
            local = layer_type == "hybrid_sliding"
            kv_heads = CONFIG["swa_num_key_value_heads"] if local else CONFIG["num_key_value_heads"]
            head_dim = CONFIG["swa_head_dim"] if local else CONFIG["head_dim"]
            conv = sconv_swa_attn.InklingConvState(num_kv_heads=kv_heads, head_dim=head_dim, hidden_size=hidden,
                                                   kernel_size=CONFIG["conv_kernel_size"],
                                                   prefix=f"layers.{idx}.conv_state")
            out[conv.prefix] = conv.get_kv_cache_spec(vc)
            if local:
                out[f"layers.{idx}.attn"] = SlidingWindowSpec(block_size=bs, num_kv_heads=kv_heads, head_size=head_dim,
                                                              dtype=kv_dtype,
                                                              sliding_window=CONFIG["sliding_window_size"])
            else:
                out[f"layers.{idx}.attn"] = FullAttentionSpec(block_size=bs, num_kv_heads=kv_heads, head_size=head_dim,
                                                              dtype=kv_dtype)
    return out


@pytest.mark.parametrize("sc", SCENARIOS, ids=lambda sc: f"{sc.available_bytes // GIB}GiB-L{sc.max_model_len}-{sc.kv_cache_dtype}")
def test_inkling_layout_equals_vllm(sc: ob.Scenario) -> None:
    model = from_hf_config(CONFIG, "inkling_text")
    layout = ob.hkv_vllm_layout(model, sc)
    vc = ob.make_vllm_config(model, sc)
    specs = _vllm_specs(vc)
    groups = get_kv_cache_groups(vc, dict(specs))
    kvcfg = get_kv_cache_config_from_groups(vc, groups, sc.available_bytes)

    assert ob.hkv_group_view(layout) == [ob.group_view(g) for g in groups]
    (pool,) = layout.pools
    assert pool.bytes_per_block == ob.bytes_per_block(vc, groups)
    assert pool.num_blocks == kvcfg.num_blocks
    assert layout.max_concurrency(sc.max_model_len) == get_max_concurrency_for_kv_cache_config(vc, kvcfg)

    # The runtime's coordinator hashes and aligns hits as vLLM's scheduler does.
    from hkv.runtime import KVCacheManager
    from hkv.runtime.kv_cache.cache_config import CacheConfig

    coordinator = KVCacheManager(layout, CacheConfig(enable_caching=sc.enable_prefix_caching)).coordinator
    scheduler_block_size, hash_block_size = resolve_kv_cache_block_sizes(kvcfg, vc)
    assert coordinator.hit_alignment == scheduler_block_size
    if sc.enable_prefix_caching:
        assert coordinator.hash_block_size == hash_block_size
        assert coordinator.hit_alignment == resolve_cache_hit_alignment_tokens(
            kvcfg, vc, scheduler_block_size, hash_block_size)


def test_inkling_without_the_hybrid_manager_is_refused_by_both() -> None:
    """--disable-hybrid-kv-cache-manager: vLLM promotes every sliding spec, the conv states too, to
    full attention that keeps its window; merging windows of 512 and 4 tokens raises at start-up,
    and hkv's `vllm-no-hybrid` layout is unavailable for the same reason."""
    sc = SCENARIOS[1]
    model = from_hf_config(CONFIG, "inkling_text")
    with pytest.raises(LayoutUnavailableError, match="sliding windows of different lengths"):
        _no_hybrid_layout(model, sc)
    vc = ob.make_vllm_config(model, sc)
    vc.scheduler_config.disable_hybrid_kv_cache_manager = True
    with pytest.raises(ValueError, match="same window size"):
        get_kv_cache_groups(vc, _vllm_specs(vc))


def _no_hybrid_layout(model, sc: ob.Scenario):
    from hkv.planner.budget.memory_budget import compute_memory_budget
    from hkv.planner.plan import build_layout

    cfg = ob.plan_config(sc)
    return build_layout("vllm-no-hybrid", model, cfg, compute_memory_budget(model, cfg))
