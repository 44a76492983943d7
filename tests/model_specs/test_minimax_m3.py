"""MiniMax-M3: vLLM 0.32 / 0.33 (models/minimax_m3/nvidia/model.py) runs the layers listed by
sparse_attention_config.sparse_attention_freq (MiniMaxM3TextConfig's default when the key is absent:
3 dense-attention layers, then 57 sparse) on its own block-sparse backend. A sparse layer caches its
GQA K/V (FullAttentionSpec) and an index key per token (common/indexer.py, MiniMaxM3IndexerCache:
MLAAttentionSpec(num_kv_heads=1, head_size=sparse_index_dim, bfloat16, SparseCacheRole.INDEXER)),
both on 128-token blocks (MINIMAX_M3_SPARSE / _INDEXER: get_supported_kernel_block_sizes [128]).

Hand calculation of the index key: 1 head x 128 dims x 2 bytes (bf16) = 256 B per token per layer,
32,768 B per 128-token page (vLLM 0.32's own MLAAttentionSpec gives page_size_bytes 32768 for it on
this machine's CPU build; the minimax_m3 package itself cannot be imported there, it needs
torchvision, so no oracle test builds the layer).

That is not DeepSeek Sparse Attention's 132 B fp8 indexer beside an MLA latent, the one indexer hkv
models, so hkv refuses such configs naming the cache instead of planning full attention. A config
without sparse layers is full attention in both vLLM and transformers and plans.
"""

from __future__ import annotations

import pytest
from hkv.model_specs.cache_options import CacheOptions
from hkv.model_specs.errors import InvalidConfigError
from hkv.model_specs.from_hf_config import from_hf_config

# MiniMax-M3-preview's text backbone shape (vLLM MiniMaxM3TextConfig defaults), four layers.
TEXT = {"model_type": "minimax_m3_text", "architectures": ["MiniMaxM3SparseForCausalLM"], "hidden_size": 6144,
        "num_hidden_layers": 4, "num_attention_heads": 64, "num_key_value_heads": 4, "head_dim": 128,
        "intermediate_size": 3072, "vocab_size": 200064, "max_position_embeddings": 524288,
        "torch_dtype": "bfloat16"}


def test_vllm_default_sparse_layers_are_refused_naming_the_index_cache() -> None:
    """No sparse_attention_config: vLLM's default makes layers 3.. sparse (60 layers: 57 of them)."""
    nested = {"model_type": "minimax_m3_vl", "architectures": ["MiniMaxM3SparseForConditionalGeneration"],
              "text_config": dict(TEXT, num_hidden_layers=60)}
    with pytest.raises(InvalidConfigError) as err:
        from_hf_config(nested, "minimax-m3")
    text = str(err.value)
    assert "57 of 60 layers (first: 3)" in text
    assert "MiniMaxM3IndexerCache: 1 x 128 bf16 = 256 B per token per layer, 128-token blocks" in text
    assert "\n" not in text


def test_sparse_attention_freq_picks_the_layers_and_the_index_dim() -> None:
    cfg = dict(TEXT, sparse_attention_config={"sparse_attention_freq": [0, 1, 0, 1], "sparse_index_dim": 64})
    with pytest.raises(InvalidConfigError, match=r"2 of 4 layers \(first: 1\).*1 x 64 bf16 = 128 B per token"):
        from_hf_config(cfg, "m3-freq")


def test_no_sparse_layers_plans_full_attention() -> None:
    """An empty sparse_attention_config: vLLM builds plain MiniMaxM3Attention layers only.
    KV per token: 4 layers x (K + V) 2 x 4 KV heads x 128 x 2 bytes = 8,192 B."""
    spec = from_hf_config(dict(TEXT, sparse_attention_config={}), "m3-dense")
    specs = [s for _, s in spec.cache_specs(CacheOptions())]
    assert len(specs) == 4
    assert sum(s.bytes_per_token for s in specs) == 8_192


def test_transformers_sparse_layer_type_is_refused() -> None:
    """transformers' MiniMaxM3VLTextConfig marks sparse layers "minimax_m3_sparse" (its own
    MiniMaxM3VLSparseCacheLayer keeps the index keys beside K/V) and names the dim index_head_dim."""
    cfg = dict(TEXT, model_type="minimax_m3_vl_text", architectures=["MiniMaxM3VLForCausalLM"], index_head_dim=128,
               layer_types=["full_attention", "minimax_m3_sparse", "minimax_m3_sparse", "full_attention"])
    with pytest.raises(InvalidConfigError, match=r"2 of 4 layers \(first: 1\).*256 B per token per layer"):
        from_hf_config(cfg, "m3-hf")


def test_transformers_full_attention_layers_plan() -> None:
    cfg = dict(TEXT, model_type="minimax_m3_vl_text", architectures=["MiniMaxM3VLForCausalLM"],
               layer_types=["full_attention"] * 4)
    assert len(from_hf_config(cfg, "m3-hf-dense").cache_layers) == 4
