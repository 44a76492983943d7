"""DomynEdge (tests/data/configs/domyn_edge.json: 12 full layers of head 256, 24 sliding layers of
window 1,025 and head 64, see tests/model_specs/test_domyn_edge.py) against vLLM 0.32's own planning.

vLLM 0.32 has no DomynEdge model class, but the specs its attention layers register (FullAttentionSpec,
SlidingWindowSpec of unequal page sizes) go through the page unification and grouping that 0.33's
v1/core/kv_cache_planning.py repeats unchanged (docs/vllm_0_33.md), so 0.32 checks hkv's groups, block
sizes, pool and concurrency for them."""

from __future__ import annotations

import json
from pathlib import Path

import oracle_bridge as ob
import pytest
from hkv.model_specs.from_hf_config import from_hf_config

CONFIG = json.loads((Path(__file__).resolve().parents[2] / "data" / "configs" / "domyn_edge.json").read_text())
GIB = 2**30


V033 = "0.33.0"  # hkv plans DomynEdge under 0.33's rules (0.32 has no class for it)


@pytest.mark.parametrize("sc", [ob.Scenario(8 * GIB, 8192, 2048, vllm_version=V033),
                                ob.Scenario(5 * GIB + 77, 8192, 8192, vllm_version=V033),
                                ob.Scenario(3 * GIB, 4096, 4096, block_size=32, enable_prefix_caching=False,
                                            vllm_version=V033),
                                ob.Scenario(6 * GIB + 7, 8192, 4096, kv_cache_dtype="fp8", vllm_version=V033)],
                         ids=["8GiB-L8k", "5GiB-mnbt8k", "noprefix-bs32", "fp8-6GiB"])
def test_domyn_edge_layout_equals_vllm(sc: ob.Scenario) -> None:
    model = from_hf_config(CONFIG, "domyn-edge")
    layout = ob.hkv_vllm_layout(model, sc)
    vllm = ob.run_vllm(model, sc)
    assert ob.hkv_group_view(layout) == [ob.group_view(g) for g in vllm.groups]
    (pool,) = layout.pools
    assert pool.bytes_per_block == ob.bytes_per_block(vllm.vllm_config, vllm.groups)
    assert pool.num_blocks == vllm.kv_cache_config.num_blocks
    assert layout.max_concurrency(sc.max_model_len) == vllm.max_concurrency
