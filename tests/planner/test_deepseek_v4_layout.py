"""DeepSeek-V4's vllm layout: vLLM 0.32's packed groups (planner/compressed_attention_layout.py), by hand.

transformers' default config: 43 layers, 23 at 128:1 (0, 1, 2, 4, ..., 42), 20 at 4:1 (3, 5, ..., 41).
Pages (tests/model_specs/test_deepseek_v4.py): window 37,440; 4:1 latents 37,440; 128:1 latents
1,728; indexer keys 8,640; compressors 32,832; indexer compressor 8,640.

Buckets by (kind, window, block): windows (43 x 37,440, W 128, b 64); full at 256 (23 x 1,728 +
20 x 37,440 + 20 x 8,640 = 961,344, unbalanced: 23/20/20); 128:1 compressors (23 x 32,832, W 128,
b 8); 4:1 compressors with the indexer's (20 x 32,832 + 20 x 8,640 = 829,440, W 8, b 4, balanced:
sets the floor 20). Repeats: the d in 20..43 least padding [43, 23, 20] -> 23 (3 + 0 + 3), so the
window bucket splits in cdiv(43, 23) = 2 groups: 22 (823,680 B) and 21 (786,240 B). One block =
the widest group, 961,344 B.

At L = 200,000, T = 2 x 8,192: windows cdiv(127 + 16,384, 64) + 1 = 259 each; full cdiv(L, 256) =
782; 128:1 compressors cdiv(16,511, 8) + 1 = 2,065; 4:1 cdiv(16,391, 4) + 1 = 4,099: 7,464 blocks.
18.65 GiB = 20,025,163,366 B // 961,344 = 20,830 blocks; 20,830 / 7,464 = 2.7907 -> 558,145 tokens.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hkv.model_specs.from_hf_config import from_hf_config
from hkv.model_specs.resolve import load_model_spec
from hkv.planner.compressed_attention_layout import approximate_gcd
from hkv.planner.errors import InvalidInputError
from hkv.planner.layout import BlockBound
from hkv.planner.plan import plan
from hkv.planner.plan_config import PlanConfig

DEFAULT = json.loads((Path(__file__).resolve().parents[1] / "data" / "configs" / "deepseek_v4.json").read_text())
GIB = 2**30
AVAILABLE = int(18.65 * GIB)


def _cfg(**kw) -> PlanConfig:
    base = {"gpu": "h100", "available_kv_memory_bytes": AVAILABLE, "max_model_len": 200_000,
            "max_num_batched_tokens": 8192, "primary_layout": "vllm"}
    return PlanConfig(**{**base, **kw})


def _layout(model, name: str = "vllm", **kw):
    cfg = _cfg(**kw)
    p = plan(model, cfg)
    return p.reports[name].layout, p


def test_default_config_groups_pool_and_capacity_by_hand() -> None:
    model = from_hf_config(DEFAULT, "dsv4")
    layout, p = _layout(model)
    assert p.block.block_size == 256
    kinds = [(g.kind.value, g.block_size, g.num_layers) for g in layout.groups]
    assert kinds == [("sliding", 64, 22), ("sliding", 64, 21), ("full", 256, 63), ("sliding", 8, 23),
                     ("sliding", 4, 40)]
    assert [g.spec.window_len for g in layout.groups] == [128, 128, None, 128, 8]
    assert layout.groups[0].layer_names[:3] == ("layers.0.swa_cache", "layers.2.swa_cache", "layers.4.swa_cache")
    (pool,) = layout.pools
    assert pool.bytes_per_block == 961_344
    assert pool.num_blocks == 20_830
    assert layout.blocks_per_request(200_000) == (259, 259, 782, 2_065, 4_099)
    assert layout.kv_cache_tokens(200_000) == 558_145
    assert p.reports["vllm"].log_lines == (
        "GPU KV cache size: 558,145 tokens, Maximum concurrency for 200,000 tokens per request: 2.79x",)


def test_flash_catalog_entry_and_the_v021_record() -> None:
    """DeepSeek-V4-Flash: layers 0-1 window only, 21 at 4:1 (2, 4, ..., 42), 20 at 128:1. Full group
    21 x 37,440 + 20 x 1,728 + 21 x 8,640 = 1,002,240 B (the block); 4:1 compressors 21 + 21 balanced
    (floor 21), repeats over [43, 21, 20] from 21: 22 (1 + 1 + 2) -> windows 22 + 21. 18.65 GiB //
    1,002,240 = 19,980 blocks. vLLM 0.32 (T = 16,384): 7,464 blocks a request -> 535,369 tokens.
    The start-up record r017 (vLLM 0.21.1rc1, T = 8,192: 131 + 131 + 782 + 2,051 + 1,041 = 4,136)
    logged 1,001,650 tokens (5.01x); hkv's 0.21 rules give 966,150 (4.83x), 3.5 % short: that
    release's DeepSeek-V4 specs predate 0.32's and are not modelled."""
    model = load_model_spec("deepseek-v4-flash")
    layout, _ = _layout(model)
    assert [(g.kind.value, g.block_size, g.num_layers) for g in layout.groups] == [
        ("sliding", 64, 22), ("sliding", 64, 21), ("full", 256, 62), ("sliding", 4, 42), ("sliding", 8, 20)]
    (pool,) = layout.pools
    assert (pool.bytes_per_block, pool.num_blocks) == (1_002_240, 19_980)
    assert layout.kv_cache_tokens(200_000) == 535_369
    old, _ = _layout(model, vllm_version="0.21.1")
    assert old.blocks_per_request(200_000) == (131, 131, 782, 2_051, 1_041)
    assert old.kv_cache_tokens(200_000) == 966_150


def test_hkv_layout_packs_the_same_groups_bounded_exactly_and_others_are_refused() -> None:
    model = from_hf_config(DEFAULT, "dsv4")
    p = plan(model, _cfg(primary_layout="hkv"))
    hkv, vllm = p.reports["hkv"].layout, p.reports["vllm"].layout
    assert [g.layer_names for g in hkv.groups] == [g.layer_names for g in vllm.groups]
    assert {g.bound for g in hkv.groups} == {BlockBound.EXACT}
    assert hkv.pools[0].num_blocks == 20_830
    assert set(p.skipped) == {"partitioned", "vllm-no-hybrid"}
    assert "block-outermost" in p.skipped["partitioned"]
    assert "hybrid KV cache manager" in p.skipped["vllm-no-hybrid"]


def test_block_size_is_the_indexer_backends_256() -> None:
    model = from_hf_config(DEFAULT, "dsv4")
    assert plan(model, _cfg(block_size=256)).block.block_size == 256
    with pytest.raises(InvalidInputError, match="DEEPSEEK_V4_INDEXER"):
        plan(model, _cfg(block_size=64))


@pytest.mark.parametrize("values,floor,expected", [
    ([43, 23, 20], 20, 23),  # pads 3 + 0 + 3
    ([43, 21, 20], 21, 22),  # pads 1 + 1 + 2
    ([6, 6], 1, 6),  # no padding at 1, 2, 3 or 6: ties go to the larger
])
def test_approximate_gcd_by_hand(values: list[int], floor: int, expected: int) -> None:
    assert approximate_gcd(values, floor) == expected


def test_mtp_layer_caches_its_window_only() -> None:
    """Under speculative decoding vLLM registers the MTP layer (index 43, compression ratio 1 past
    num_hidden_layers) with its window cache only: 44 windows, repeats over [44, 21, 20] from 21 ->
    22 (0 + 1 + 2), so 22 + 22 windows; the block (the full group, 1,002,240 B) and the blocks a
    request holds do not change."""
    model = load_model_spec("deepseek-v4-flash")
    assert [layer.name for layer in model.draft_layers] == ["layers.43.swa_cache"]
    layout, _ = _layout(model, speculative_tokens=2, vllm_version="0.32.0")
    assert [g.num_layers for g in layout.groups] == [22, 22, 62, 42, 20]
    assert layout.groups[1].layer_names[-1] == "layers.43.swa_cache"
    assert (layout.pools[0].bytes_per_block, layout.pools[0].num_blocks) == (1_002_240, 19_980)
    assert layout.kv_cache_tokens(200_000) == 535_369
