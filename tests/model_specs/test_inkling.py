"""Inkling (inkling_text): a conv-state sliding window of 4-token blocks beside every layer's
attention, planned as vLLM 0.32 plans it. Every figure is worked by hand from transformers' default
config (tests/data/configs/inkling_text.json: 66 layers, every sixth full; hidden 6,144; full layers
8 KV heads x 128, local layers 16 x 128 with a 512-token window; conv kernel 4; bf16) and vLLM's
model code (vllm/models/inkling/nvidia/sconv_swa_attn.py, attention.py). The oracle test
tests/oracle/vllm_side/test_inkling_layout.py checks the same layouts against vLLM's own grouping.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hkv.model_specs.cache_options import CacheOptions
from hkv.model_specs.cache_spec import CacheKind
from hkv.model_specs.conv_state_cache import ConvStateCacheSpec
from hkv.model_specs.errors import InvalidConfigError
from hkv.model_specs.from_hf_config import from_hf_config
from hkv.planner.plan import plan
from hkv.planner.plan_config import PlanConfig

CONFIG = json.loads((Path(__file__).resolve().parents[1] / "data" / "configs" / "inkling_text.json").read_text())
GIB = 2**30


def _specs(config: dict, tp: int = 1) -> dict[str, object]:
    model = from_hf_config(config, "inkling")
    return {layer.name: spec for layer, spec in model.cache_specs(CacheOptions(kv_dtype_bytes=2, tp=tp))}


def test_every_layer_caches_its_conv_state_first() -> None:
    specs = _specs(CONFIG)
    names = list(specs)
    assert len(names) == 132
    assert names[:4] == ["layers.0.conv_state", "layers.0.attn", "layers.1.conv_state", "layers.1.attn"]
    full = [n for n, s in specs.items() if s.kind is CacheKind.FULL]
    assert full == [f"layers.{i}.attn" for i in range(5, 66, 6)]
    assert from_hf_config(CONFIG, "inkling").layer_mix() == {"conv_state": 66, "sliding": 55, "full": 11}


def test_conv_state_and_attention_pages() -> None:
    """Conv rows: next_pow2(2 x head_dim + 2 x hidden / kv_heads): full layers
    2 x 128 + 2 x 768 = 1,792 -> 2,048, local layers 2 x 128 + 2 x 384 = 1,024 -> 1,024. A block of
    4 tokens: 4 x 8 x 2,048 x 2 = 4 x 16 x 1,024 x 2 = 131,072 B. Attention at 16 tokens: full
    16 x 8 x 256 x 2 = 65,536 B, local 16 x 16 x 256 x 2 = 131,072 B."""
    specs = _specs(CONFIG)
    conv_full, conv_local = specs["layers.5.conv_state"], specs["layers.0.conv_state"]
    assert isinstance(conv_full, ConvStateCacheSpec) and isinstance(conv_local, ConvStateCacheSpec)
    assert (conv_full.num_kv_heads, conv_full.head_dim, conv_full.head_dim_v) == (8, 2048, 0)
    assert (conv_local.num_kv_heads, conv_local.head_dim) == (16, 1024)
    for conv in (conv_full, conv_local):
        assert (conv.kind, conv.window_len, conv.block_len) == (CacheKind.SLIDING, 4, 4)
        assert conv.page_size_bytes(4) == 131_072
    assert specs["layers.5.attn"].page_size_bytes(16) == 65_536
    local = specs["layers.0.attn"]
    assert (local.kind, local.window_len, local.page_size_bytes(16)) == (CacheKind.SLIDING, 512, 131_072)


def test_tensor_parallel_splits_heads_not_rows() -> None:
    """TP 2: half the KV heads per rank, the packed row as wide (InklingConvState)."""
    specs = _specs(CONFIG, tp=2)
    assert (specs["layers.5.conv_state"].num_kv_heads, specs["layers.5.conv_state"].head_dim) == (4, 2048)
    assert (specs["layers.0.conv_state"].num_kv_heads, specs["layers.0.conv_state"].head_dim) == (8, 1024)


def test_more_ranks_than_kv_heads_is_refused() -> None:
    """vLLM asserts tp_size <= num_kv_heads for the conv state (8 on the full layers)."""
    with pytest.raises(InvalidConfigError, match="tp 16 exceeds the 8 KV heads of layer 5"):
        _specs(CONFIG, tp=16)


def test_conv_state_ignores_the_kv_cache_dtype() -> None:
    """vLLM keeps the conv state in the model dtype (it asserts bfloat16); fp8 KV halves attention only."""
    model = from_hf_config(CONFIG, "inkling")
    specs = {layer.name: spec for layer, spec in model.cache_specs(CacheOptions(kv_dtype_bytes=1))}
    assert specs["layers.0.conv_state"].page_size_bytes(4) == 131_072
    assert specs["layers.0.attn"].page_size_bytes(16) == 65_536


def test_local_layers_from_local_layer_ids_or_the_default() -> None:
    without = {k: v for k, v in CONFIG.items() if k != "layer_types"}
    ids = _specs({**without, "local_layer_ids": [0, 1]})
    assert ids["layers.0.attn"].kind is CacheKind.SLIDING and ids["layers.2.attn"].kind is CacheKind.FULL
    default = _specs(without)
    assert [n for n, s in default.items() if s.kind is CacheKind.FULL] == [f"layers.{i}.attn" for i in range(5, 66, 6)]
    with pytest.raises(InvalidConfigError, match="local_layer_ids"):
        _specs({**without, "local_layer_ids": [70]})


def test_inkling2_is_still_refused() -> None:
    """vLLM 0.32 has no Inkling2 model class; its layers keep their refusal."""
    with pytest.raises(InvalidConfigError, match="hybrid_sliding"):
        from_hf_config({**CONFIG, "model_type": "inkling2_text", "architectures": ["Inkling2ForCausalLM"]}, "i2")


def test_vllm_layout_by_hand() -> None:
    """vLLM: the largest page is 131,072 B; full attention's 65,536 B page divides it, so its block
    doubles to 32 tokens. Four specs of 55, 55, 11 and 11 layers: group size 11 (55 >= 1.5 x 11), so
    5 + 5 + 1 + 1 = 12 groups of 11 layers in order of first registration: local conv (block 4),
    local attention (16), global conv (4), global attention (32). A block is 11 x 131,072 =
    1,441,792 B; 40 GiB = 42,949,672,960 B hold 29,789 (remainder 131,072).
    Per request at L = 32,768 with T = 2 x 8,192: conv cdiv(3 + 16,384, 4) + 1 = 4,098 (6 groups),
    local attention cdiv(511 + 16,384, 16) + 1 = 1,057 (5 groups), full 32,768 / 32 = 1,024:
    30,897 blocks, so 29,789 / 30,897 = 0.9641x. Hits land on lcm(4, 16, 32) = 32 tokens."""
    model = from_hf_config(CONFIG, "inkling")
    cfg = PlanConfig(gpu=None, available_kv_memory_bytes=40 * GIB, max_model_len=32_768,
                     max_num_batched_tokens=8192, block_size=16, primary_layout="vllm")
    report = plan(model, cfg).reports["vllm"]
    layout = report.layout
    assert [(g.kind, g.block_size, len(g.layer_names)) for g in layout.groups] == (
        [(CacheKind.SLIDING, 4, 11)] * 5 + [(CacheKind.SLIDING, 16, 11)] * 5
        + [(CacheKind.SLIDING, 4, 11), (CacheKind.FULL, 32, 11)])
    assert layout.groups[0].layer_names[:2] == ("layers.0.conv_state", "layers.6.conv_state")
    assert {g.page_size_bytes for g in layout.groups} == {131_072}
    (pool,) = layout.pools
    assert (pool.bytes_per_block, pool.num_blocks) == (1_441_792, 29_789)
    assert sum(layout.blocks_per_request(32_768)) == 30_897
    assert layout.max_concurrency(32_768) == pytest.approx(29_789 / 30_897)
    assert "vllm-no-hybrid" in plan(model, cfg).skipped  # two window lengths: vLLM fails to merge them
