"""Three cache kinds in one model (GDN + sliding window + full attention, tests/data/configs/
three_kinds.json, see tests/planner/test_three_kinds.py) against vLLM 0.32's own planning: the
Mamba-aligned block, groups, pool and concurrency, with prefix caching on and off."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import oracle_bridge as ob
from hkv.model_specs.from_hf_config import from_hf_config

CONFIG = json.loads((Path(__file__).resolve().parents[2] / "data" / "configs" / "three_kinds.json").read_text())
GIB = 2**30


@pytest.mark.parametrize("sc", [ob.Scenario(8 * GIB, 8192, 2048), ob.Scenario(5 * GIB + 77, 32768, 8192),
                                ob.Scenario(3 * GIB, 16384, 4096, block_size=32, enable_prefix_caching=False)],
                         ids=["8GiB-L8k", "5GiB-L32k", "noprefix-bs32"])
def test_three_kinds_layout_equals_vllm(sc: ob.Scenario) -> None:
    model = from_hf_config(CONFIG, "three-kinds")
    layout = ob.hkv_vllm_layout(model, sc)
    vllm = ob.run_vllm(model, sc)
    assert ob.hkv_group_view(layout) == [ob.group_view(g) for g in vllm.groups]
    assert {v["kind"] for v in ob.hkv_group_view(layout)} == {ob.CacheKind.RECURRENT, ob.CacheKind.SLIDING,
                                                              ob.CacheKind.FULL}
    (pool,) = layout.pools
    assert pool.bytes_per_block == ob.bytes_per_block(vllm.vllm_config, vllm.groups)
    assert pool.num_blocks == vllm.kv_cache_config.num_blocks
    assert layout.max_concurrency(sc.max_model_len) == vllm.max_concurrency
