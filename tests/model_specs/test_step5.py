"""Step5 (vLLM 0.33 Step5ForCausalLM / Step5ForConditionalGeneration) planned as 0.33 lays it out.

No 0.33 oracle runs here: every figure is worked by hand from the 0.33.0 wheel's source (paths under
vllm/). Fixture: tests/data/configs/step5_preview.json, RECONSTRUCTED (no step5 config.json is public;
the geometry is a public description of Step-5-Preview's config and safetensors headers): 92 layers,
layer 4k + 3 "full_attention" (23 sparse layers), the rest "sliding_attention" (69), window 512,
4 KV heads (num_attention_groups) x head_dim 192, bf16, sparse_config enabled.

Per rank at TP 1, block 16 (FLASH_ATTN's default on sm90):
- sliding K/V and sparse K/V: 2 x 4 x 192 x 2 B = 3,072 B per token, 49,152 B per page
  (models/step5/nvidia/model.py l.889-960: KV heads num_attention_groups, sliding layers only
  change the query heads);
- summary: 1 x 256 uint8 per 8 tokens (sparse_summary_cache.py l.147-154): 16 / 8 x 256 = 512 B;
- tail ring: one K/V page (csa_tail_ring.py l.166-188): 49,152 B = 48 rows of 1,024 B (>= 7 needed).
Grouping (block-outermost: STEP5_DSA supports BLNHC only, sparse_attention.py l.822-826; so
kv_cache_planning.py l.914-1041 _get_packed_kv_cache_groups):
- buckets in registration order: sliding (69, one page size), full (23 K/V + 23 summaries: balanced
  1:1), circular (23 rings; CircularBufferSpec is not a FullAttentionSpec, kv_cache_interface.py
  l.991-996);
- floor 23 (the balanced mixed bucket), repeats = approximate gcd of [69, 23, 23] from 23 = 23:
  sliding 69 / 23 = 3 groups of 23 (layers 0, 4, ...; 1, 5, ...; 2, 6, ...), full 1 group of 46;
- the ring bucket is a state bucket: the widest group is full, 23 x (49,152 + 512) = 1,142,272 B,
  which holds 1,142,272 // 49,152 = 23 rings: 1 group of 23;
- bytes per block (kv_cache_planning.py l.574-605): 1,142,272 rounded up to lcm(STEP5_DSA's
  MultipleOf(8) -> the 8-token K/V page 24,576 B (kv_cache_interface.py l.224-232), the ring's
  1,024 B) = 24,576: 47 x 24,576 = 1,155,072 B;
- 20 GiB: 21,474,836,480 // 1,155,072 = 18,591 blocks.
A request of 8,192 tokens (T = (pp + 1) x 8,192 = 16,384 in 0.33): full 512, each sliding group
cdiv(min(511 + 16,384, 8,192), 16) + 1 = 513, the ring 1 (CircularBufferSpec.max_num_blocks_per_req):
512 + 3 x 513 + 1 = 2,052 blocks; concurrency 18,591 / 2,052 = 9.06x. hkv's layout packs the same
groups and block, charging the sliding groups its exact bound (T = 2,048: cdiv(2,559, 16) + 1 = 161):
512 + 3 x 161 + 1 = 996 blocks.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hkv.model_specs.cache_options import CacheOptions
from hkv.model_specs.cache_spec import AttentionCacheSpec, CacheKind
from hkv.model_specs.errors import InvalidConfigError
from hkv.model_specs.from_hf_config import from_hf_config
from hkv.model_specs.step5_layers import CircularBufferCacheSpec, SparseKVCacheSpec, SummaryCacheSpec
from hkv.planner.errors import InvalidInputError
from hkv.planner.plan import plan
from hkv.planner.plan_config import PlanConfig

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "configs"
PREVIEW = json.loads((CONFIGS / "step5_preview.json").read_text())
TINY = json.loads((CONFIGS / "step5_tiny.json").read_text())
GIB = 2**30
FULL, SLIDING, CIRCULAR = CacheKind.FULL, CacheKind.SLIDING, CacheKind.CIRCULAR


def _specs(config: dict, **options) -> list:
    model = from_hf_config(config, "step5")
    return list(model.cache_specs(CacheOptions(kv_dtype_bytes=2, **options)))


def _plan(config: dict, **options):
    base = {"gpu": "h100", "available_kv_memory_bytes": 20 * GIB, "max_model_len": 8192,
            "max_num_batched_tokens": 8192}
    return plan(from_hf_config(config, "step5"), PlanConfig(**{**base, **options}))


def test_preview_caches_in_registration_order() -> None:
    pairs = _specs(PREVIEW)
    assert len(pairs) == 69 + 3 * 23
    assert [layer.name for layer, _ in pairs[3:7]] == [
        "layers.3.attn", "layers.3.attn.sparse_summary_cache", "layers.3.attn.csa_tail_ring", "layers.4.attn"]
    sliding = [spec for _, spec in pairs if spec.kind is SLIDING]
    assert len(sliding) == 69 and {(s.bytes_per_token, s.window_len) for s in sliding} == {(3_072, 512)}
    kv, summary, ring = pairs[3][1], pairs[4][1], pairs[5][1]
    assert isinstance(kv, SparseKVCacheSpec) and kv.kind is FULL and kv.page_size_bytes(16) == 49_152
    assert isinstance(summary, SummaryCacheSpec) and summary.page_size_bytes(16) == 512
    assert isinstance(ring, CircularBufferCacheSpec) and ring.kind is CIRCULAR
    assert ring.page_size_bytes(16) == 49_152 and ring.capacity_rows(16) == 48
    assert kv.block_stride_alignment_bytes(16) == 24_576 and kv.block_stride_alignment_bytes(8) == 1
    assert ring.block_stride_alignment_bytes(16) == 1_024


def test_summary_ignores_kv_cache_dtype_and_ring_follows_the_kv_page() -> None:
    """fp8 K/V (STEP5_DSA takes fp8): the K/V page halves to 24,576 B and so does the ring (24 rows);
    the summary stays 512 B of uint8. TP 4: one KV head per rank, 12,288 B pages, 12 rows."""
    model = from_hf_config(PREVIEW, "step5")
    kv, summary, ring = [spec for _, spec in model.cache_specs(CacheOptions(kv_dtype_bytes=1))][3:6]
    assert (kv.page_size_bytes(16), summary.page_size_bytes(16), ring.capacity_rows(16)) == (24_576, 512, 24)
    kv, summary, ring = [spec for _, spec in model.cache_specs(CacheOptions(tp=4))][3:6]
    assert (kv.page_size_bytes(16), summary.page_size_bytes(16), ring.capacity_rows(16)) == (12_288, 512, 12)


def test_vllm_layout_by_hand() -> None:
    report = _plan(PREVIEW).reports["vllm"]
    layout = report.layout
    assert [(g.kind, g.num_layers) for g in layout.groups] == [(SLIDING, 23)] * 3 + [(FULL, 46), (CIRCULAR, 23)]
    assert layout.groups[0].layer_ids == tuple(range(0, 92, 4))
    assert layout.groups[3].layer_names[:2] == ("layers.3.attn", "layers.3.attn.sparse_summary_cache")
    (pool,) = layout.pools
    assert (pool.bytes_per_block, pool.num_blocks) == (1_155_072, 18_591)
    assert layout.blocks_per_request(8192) == (513, 513, 513, 512, 1)
    assert layout.max_concurrency(8192) == pytest.approx(18_591 / 2_052)


def test_hkv_layout_packs_the_same_block_with_exact_bounds() -> None:
    layout = _plan(PREVIEW).reports["hkv"].layout
    assert [(g.kind, g.num_layers) for g in layout.groups] == [(SLIDING, 23)] * 3 + [(FULL, 46), (CIRCULAR, 23)]
    assert (layout.pools[0].bytes_per_block, layout.pools[0].num_blocks) == (1_155_072, 18_591)
    assert sum(layout.blocks_per_request(8192)) == 996


@pytest.mark.parametrize("options,bytes_per_block", [
    # TP 4: 23 x (12,288 + 512) = 294,400 -> a multiple of lcm(6,144, 1,024) = 6,144: 48 x 6,144
    ({"tp": 4}, 294_912),
    # block 32: 23 x (98,304 + 1,024) = 2,284,544 -> a multiple of the 8-token page 24,576: 93 x 24,576
    ({"block_size": 32}, 2_285_568),
])
def test_block_stride_rounding_by_hand(options: dict, bytes_per_block: int) -> None:
    (pool,) = _plan(PREVIEW, **options).reports["vllm"].layout.pools
    assert (pool.bytes_per_block, pool.num_blocks) == (bytes_per_block, 20 * GIB // bytes_per_block)


def test_ring_too_small_for_the_draft_tokens_is_refused() -> None:
    """TP 4, block 16: 12 rows; 6 draft tokens need 7 + 6 = 13 (csa_tail_ring.py l.160, l.169-175)."""
    with pytest.raises(InvalidInputError, match="needs 13 rows of 1,024 B in one 12,288-byte KV page") as err:
        _plan(PREVIEW, tp=4, speculative_tokens=6, primary_layout="vllm")
    assert err.value.fields == ("block_size",)
    layout = _plan(PREVIEW, tp=4, speculative_tokens=6, block_size=32).reports["vllm"].layout
    assert {g.kind for g in layout.groups} == {SLIDING, FULL, CIRCULAR}  # 24 rows at block 32


def test_no_hybrid_and_partitioned_are_refused_with_the_reason() -> None:
    result = _plan(PREVIEW)
    assert "CircularBufferSpec has no full-attention form" in result.skipped["vllm-no-hybrid"]
    assert "block-outermost packing" in result.skipped["partitioned"]


def test_mtp_layers_follow_layer_types_with_mtp() -> None:
    """layer_types lists 95 entries: 92 layers + 3 MTP layers (Step5Config keeps them as
    layer_types_with_mtp), all sliding: under speculative decoding three more sliding caches."""
    model = from_hf_config(PREVIEW, "step5")
    assert [(d.layer_idx, d.kind, d.window_len) for d in model.draft_layers] == [(i, SLIDING, 512) for i in (92, 93, 94)]


def test_sparse_disabled_keeps_plain_attention() -> None:
    """sparse_config.enabled false: the section still sets the layout rule (vLLM serves it), but no
    layer is DSA: 69 sliding + 23 plain full K/V, no summary and no ring."""
    config = {**PREVIEW, "sparse_config": {"enabled": False}}
    specs = [spec for _, spec in _specs(config)]
    assert [type(s) for s in specs].count(AttentionCacheSpec) == 92
    assert sum(s.kind is FULL for s in specs) == 23


def test_default_layer_types_and_attention_other_setting() -> None:
    """Without layer_types even layers are sliding (Step5Attention's default, model.py l.897-904);
    attention_other_setting replaces the heads and head_dim of the layers of its type
    (model.py l.1870-1881): 8 groups x 128 on the sliding layers = 4,096 B per token."""
    config = {k: v for k, v in TINY.items() if k != "layer_types"}
    assert [spec.kind for _, spec in _specs(config)] == [SLIDING, FULL, FULL, CIRCULAR] * 2
    other = {**TINY, "attention_other_setting": {"attention_type": "sliding_attention", "num_attention_heads": 16,
                                                "num_attention_groups": 8, "head_dim": 128}}
    sliding = {spec.bytes_per_token for _, spec in _specs(other) if spec.kind is SLIDING}
    assert sliding == {2 * 8 * 128 * 2}


@pytest.mark.parametrize("change,message", [
    ({"sparse_config": {"region_block_size": 16}}, "sparse_config.region_block_size is 16"),
    ({"sparse_config": {"apply_to_layer_types": ["sliding_attention"]}}, "apply_to_layer_types"),
    ({"use_head_wise_attn_gate": False}, "use_head_wise_attn_gate"),
    ({"step3p5_sparse_config": {}}, "step3p5_sparse_config is set"),
    ({"sparse_config": {"topk": 2048}}, "topk 2048 is outside"),
    ({"sparse_config": {"sparse_indexer_num_heads": 32}}, "32 / 4 is not 2 or 4"),
])
def test_what_vllm_refuses_is_refused_in_one_line(change: dict, message: str) -> None:
    with pytest.raises(InvalidConfigError, match=message) as err:
        from_hf_config({**TINY, **change}, "step5")
    assert "\n" not in str(err.value)


def test_vllm_0_32_has_no_step5_class() -> None:
    """Step5ForCausalLM is new in 0.33.0's registry (model_executor/models/registry.py l.211); 0.32.0's
    has none, so its vllm layouts are not applicable; hkv's own layout still plans."""
    result = _plan(PREVIEW, vllm_version="0.32.0")
    assert "vLLM 0.32.0 has no model class for step5" in result.skipped["vllm"]
    assert "hkv" in result.reports


def test_step5_dsa_needs_sm90_sm100_or_sm103() -> None:
    """model.py l.1025-1031: an A100 (sm80) cannot run STEP5_DSA, so vLLM's layouts do not apply."""
    result = _plan(PREVIEW, gpu="a100-80gb")
    assert "needs SM90, SM100 or SM103, not a100-80gb (sm80)" in result.skipped["vllm"]
    assert "vllm" in _plan(PREVIEW, gpu="b200").reports
