"""dots3 (DSA layers beside sliding MLA layers) against vLLM 0.32's grouping.

Specs as vLLM's Dots3Note builds them (models/dots3_note/nvidia/model.py): on indexed layers the
DeepseekV32IndexerCache keys (deepseek_v2.py:658-666: MLAAttentionSpec, 132 uint8, role INDEXER)
registered before the padded MLA latent (MLAAttention's spec with head_size replaced by
swa_kv_lora_rank + swa_qk_rope_head_dim, model.py:236-240, 306); on sliding layers MLAAttention with
a sliding window (mla_attention.py:1369: SlidingWindowMLASpec). bf16 KV (auto), 64-token blocks
(the DSA indexer backend's), block-outermost BLHNC as Dots3NotePaddedSparseBackend declares.
transformers' default config: 46 layers, 13 indexed; sliding latent 1024 + 64, window 512.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from hkv.model_specs.from_hf_config import from_hf_config
from hkv.planner.plan import plan
from hkv.planner.plan_config import PlanConfig
from packed_layout_check import assert_vllm_layout_equals, packed_vllm_config
from vllm.v1.core.kv_cache_utils import get_kv_cache_groups
from vllm.v1.kv_cache_interface import MLAAttentionSpec, SlidingWindowMLASpec, SparseCacheRole, get_kv_quant_mode

CONFIG = json.loads((Path(__file__).resolve().parents[2] / "data" / "configs" / "dots3_note_text.json").read_text())
GIB = 2**30
WIDTH = 1024 + 64


def _vllm_specs() -> dict:
    common = {"block_size": 64, "num_kv_heads": 1, "max_tp_shards": 1, "head_size": WIDTH, "dtype": torch.bfloat16,
              "cache_dtype_str": "auto", "kv_quant_mode": get_kv_quant_mode("auto")}
    out: dict = {}
    for i, kind in enumerate(CONFIG["layer_types"]):
        if kind == "indexed_attention":
            out[f"layers.{i}.indexer"] = MLAAttentionSpec(block_size=64, num_kv_heads=1, max_tp_shards=1, head_size=132,
                                                          dtype=torch.uint8, cache_role=SparseCacheRole.INDEXER)
            out[f"layers.{i}.attn"] = MLAAttentionSpec(**common, is_index_group_leader=True)
        else:
            out[f"layers.{i}.attn"] = SlidingWindowMLASpec(**common, sliding_window=CONFIG["sliding_window"])
    return out


@pytest.mark.parametrize("available_gib,max_model_len,mnbt", [(40, 131072, 8192), (7.5, 524288, 2048)])
def test_dots3_groups_equal_vllm(available_gib: float, max_model_len: int, mnbt: int) -> None:
    vc = packed_vllm_config(max_model_len, mnbt, block_size=64, cache_dtype="auto")
    assert_vllm_layout_equals(from_hf_config(CONFIG, "dots3"), vc, _vllm_specs(), int(available_gib * GIB))


def test_without_the_hybrid_manager_both_refuse() -> None:
    """vLLM 0.32 promotes the sliding MLA windows with replace_as, which passes SlidingWindowMLASpec's
    bounded_replay to MLAAttentionSpec and raises; hkv's vllm-no-hybrid layout is unavailable."""
    vc = packed_vllm_config(131072, 8192, block_size=64, cache_dtype="auto", hybrid=False)
    with pytest.raises(TypeError, match="bounded_replay"):
        get_kv_cache_groups(vc, _vllm_specs())
    p = plan(from_hf_config(CONFIG, "dots3"), PlanConfig(gpu="h100", available_kv_memory_bytes=40 * GIB,
                                                         max_model_len=131072, primary_layout="vllm"))
    assert "bounded_replay" in p.skipped["vllm-no-hybrid"]
