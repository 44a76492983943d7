"""MiniMax-M3 (sparse layers: GQA K/V + an index-key cache) against vLLM 0.32's grouping.

vLLM's minimax_m3 package needs torchvision, so its layers cannot be built here; the specs are
written as its modules return them (models/minimax_m3/nvidia/model.py): dense layers (not in
sparse_attention_freq) build MiniMaxM3Attention over vLLM's Attention (FullAttentionSpec); a sparse
layer builds MiniMaxM3SparseAttention, whose MiniMaxM3Indexer registers its index cache first
(common/indexer.py: MiniMaxM3IndexerCache.get_kv_cache_spec, MLAAttentionSpec(num_kv_heads=1,
head_size=sparse_index_dim, bfloat16, SparseCacheRole.INDEXER)), then its own GQA K/V
(MiniMaxM3SparseAttention.get_kv_cache_spec: FullAttentionSpec). 128-token blocks (the MiniMax
backends' only kernel block). vLLM's generic grouping (v1/core/kv_cache_utils.py) then makes one
UniformTypeKVCacheSpecs group: MLAAttentionSpec is a FullAttentionSpec subclass.
"""

from __future__ import annotations

import pytest
import torch
from hkv.model_specs.from_hf_config import from_hf_config
from packed_layout_check import assert_vllm_layout_equals, packed_vllm_config
from vllm.v1.kv_cache_interface import FullAttentionSpec, MLAAttentionSpec, SparseCacheRole, get_kv_quant_mode

GIB = 2**30
# MiniMaxM3TextConfig's attention shape (vLLM transformers_utils/configs/minimax_m3.py), 60 layers, no
# sparse_attention_config: vLLM's default, layers 0-2 dense, 3-59 sparse, sparse_index_dim 128.
CONFIG = {"model_type": "minimax_m3_text", "architectures": ["MiniMaxM3SparseForCausalLM"], "hidden_size": 6144,
          "num_hidden_layers": 60, "num_attention_heads": 64, "num_key_value_heads": 4, "head_dim": 128,
          "intermediate_size": 3072, "vocab_size": 200064, "max_position_embeddings": 524288,
          "torch_dtype": "bfloat16"}


def _vllm_specs(num_layers: int, first_sparse: int) -> dict:
    kv = {"block_size": 128, "num_kv_heads": 4, "head_size": 128, "head_size_v": 128, "dtype": torch.bfloat16,
          "kv_quant_mode": get_kv_quant_mode("auto")}
    out: dict = {}
    for i in range(num_layers):
        if i >= first_sparse:
            out[f"layers.{i}.indexer"] = MLAAttentionSpec(block_size=128, num_kv_heads=1, head_size=128,
                                                          dtype=torch.bfloat16, cache_role=SparseCacheRole.INDEXER)
        out[f"layers.{i}.attn"] = FullAttentionSpec(**kv)
    return out


@pytest.mark.parametrize("layout", ["BLHNC", "LBHNC"])
@pytest.mark.parametrize("available_gib,max_model_len,mnbt", [(40, 131072, 8192), (7.5, 524288, 2048)])
def test_minimax_m3_groups_equal_vllm(layout: str, available_gib: float, max_model_len: int, mnbt: int) -> None:
    vc = packed_vllm_config(max_model_len, mnbt, block_size=128, cache_dtype="auto")
    vc.cache_config.kv_cache_layout = layout  # LBHNC: what the MSA backends declare
    assert_vllm_layout_equals(from_hf_config(CONFIG, "minimax-m3"), vc, _vllm_specs(60, 3), int(available_gib * GIB))
