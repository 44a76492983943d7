"""MiniMax-M3: vLLM 0.32 / 0.33 (models/minimax_m3/nvidia/model.py) runs the layers listed by
sparse_attention_config.sparse_attention_freq (MiniMaxM3TextConfig's default when the key is absent:
3 dense-attention layers, then 57 sparse) on its own block-sparse backend. A sparse layer caches an
index key per token (common/indexer.py, MiniMaxM3IndexerCache: MLAAttentionSpec(num_kv_heads=1,
head_size=sparse_index_dim, bfloat16, SparseCacheRole.INDEXER), registered first) and its GQA K/V
(FullAttentionSpec), both on 128-token blocks (MINIMAX_M3_SPARSE / _INDEXER:
get_supported_kernel_block_sizes [128]); hkv models them as a "minimax_m3_sparse" layer: an INDEXER
cache layer plus the full-attention K/V.

Hand calculation, MiniMax-M3-preview's shape (4 KV heads x head_dim 128, bf16, sparse_index_dim 128):
- K/V per layer: 2 x 4 x 128 x 2 B = 2,048 B per token, 262,144 B per 128-token page;
- index key per sparse layer: 1 x 128 x 2 B = 256 B per token, 32,768 B per page;
- one vLLM block (UniformTypeKVCacheSpecs: every layer's page side by side):
  60 x 262,144 + 57 x 32,768 = 15,728,640 + 1,867,776 = 17,596,416 B;
- 40 GiB = 42,949,672,960 B // 17,596,416 = 2,440 blocks (2,440 x 17,596,416 = 42,935,255,040).
At TP 4 a rank keeps one KV head (512 B/token, 65,536 B/page) but the whole index key (vLLM's spec
has num_kv_heads=1 on every rank): 60 x 65,536 + 57 x 32,768 = 5,799,936 B per block.
tests/oracle/vllm_side/test_minimax_m3_layout.py checks the same layout against vLLM's grouping.
"""

from __future__ import annotations

import pytest
from hkv.model_specs.cache_options import CacheOptions
from hkv.model_specs.cache_spec import CacheRole
from hkv.model_specs.errors import InvalidConfigError
from hkv.model_specs.from_hf_config import from_hf_config
from hkv.planner.budget.memory_budget import compute_memory_budget
from hkv.planner.errors import InvalidInputError
from hkv.planner.plan import build_layout
from hkv.planner.plan_config import PlanConfig

GIB = 2**30
# MiniMax-M3-preview's text backbone shape (vLLM MiniMaxM3TextConfig defaults), four layers.
TEXT = {"model_type": "minimax_m3_text", "architectures": ["MiniMaxM3SparseForCausalLM"], "hidden_size": 6144,
        "num_hidden_layers": 4, "num_attention_heads": 64, "num_key_value_heads": 4, "head_dim": 128,
        "intermediate_size": 3072, "vocab_size": 200064, "max_position_embeddings": 524288,
        "torch_dtype": "bfloat16"}
DEFAULT_60 = {"model_type": "minimax_m3_vl", "architectures": ["MiniMaxM3SparseForConditionalGeneration"],
              "text_config": dict(TEXT, num_hidden_layers=60)}


def _index_layers(model) -> list[int]:
    return [layer.layer_idx for layer in model.cache_layers if getattr(layer, "role", None) is CacheRole.INDEXER]


def _layout(config: dict, layout: str = "vllm", **cfg: object):
    model = from_hf_config(config, "minimax-m3")
    plan_cfg = PlanConfig(**cfg)
    return build_layout(layout, model, plan_cfg, compute_memory_budget(model, plan_cfg))


def test_vllm_default_makes_layers_3_to_59_sparse() -> None:
    """No sparse_attention_config: vLLM's default [0]*3 + [1]*57."""
    model = from_hf_config(DEFAULT_60, "minimax-m3")
    assert _index_layers(model) == list(range(3, 60))
    names = [layer.name for layer in model.cache_layers]
    assert names[:5] == ["layers.0.attn", "layers.1.attn", "layers.2.attn", "layers.3.indexer", "layers.3.attn"]
    assert len(names) == 117


@pytest.mark.parametrize("kv_cache_dtype,kv_bytes", [("auto", 2), ("fp8", 1)])
def test_index_key_is_256_bf16_bytes_whatever_the_kv_cache_dtype(kv_cache_dtype: str, kv_bytes: int) -> None:
    model = from_hf_config(TEXT, "m3")
    specs = dict((layer.name, spec) for layer, spec in model.cache_specs(CacheOptions(kv_dtype_bytes=kv_bytes)))
    assert specs["layers.3.indexer"].bytes_per_token == 256  # 1 x 128 x 2
    assert specs["layers.3.attn"].bytes_per_token == 2 * 4 * 128 * kv_bytes


def test_sparse_attention_freq_picks_the_layers_and_the_index_dim() -> None:
    cfg = dict(TEXT, sparse_attention_config={"sparse_attention_freq": [0, 1, 0, 1], "sparse_index_dim": 64})
    model = from_hf_config(cfg, "m3-freq")
    assert _index_layers(model) == [1, 3]
    specs = dict((layer.name, spec) for layer, spec in model.cache_specs(CacheOptions()))
    assert specs["layers.1.indexer"].bytes_per_token == 128  # 1 x 64 x 2


def test_no_sparse_layers_plans_full_attention() -> None:
    """An empty sparse_attention_config: vLLM builds plain MiniMaxM3Attention layers only.
    KV per token: 4 layers x (K + V) 2 x 4 KV heads x 128 x 2 bytes = 8,192 B."""
    spec = from_hf_config(dict(TEXT, sparse_attention_config={}), "m3-dense")
    specs = [s for _, s in spec.cache_specs(CacheOptions())]
    assert len(specs) == 4
    assert sum(s.bytes_per_token for s in specs) == 8_192


def test_transformers_sparse_layer_type_caches_the_index_keys() -> None:
    """transformers' MiniMaxM3VLTextConfig marks sparse layers "minimax_m3_sparse" and names the dim
    index_head_dim."""
    cfg = dict(TEXT, model_type="minimax_m3_vl_text", architectures=["MiniMaxM3VLForCausalLM"], index_head_dim=128,
               layer_types=["full_attention", "minimax_m3_sparse", "minimax_m3_sparse", "full_attention"])
    assert _index_layers(from_hf_config(cfg, "m3-hf")) == [1, 2]


def test_transformers_full_attention_layers_plan() -> None:
    cfg = dict(TEXT, model_type="minimax_m3_vl_text", architectures=["MiniMaxM3VLForCausalLM"],
               layer_types=["full_attention"] * 4)
    assert len(from_hf_config(cfg, "m3-hf-dense").cache_layers) == 4


def test_sparse_layer_type_outside_minimax_m3_is_refused() -> None:
    cfg = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
           "num_key_value_heads": 4, "intermediate_size": 128, "vocab_size": 128,
           "layer_types": ["full_attention", "minimax_m3_sparse"]}
    with pytest.raises(InvalidConfigError, match=r"'minimax_m3_sparse' \(MiniMax-M3 sparse attention\)"):
        from_hf_config(cfg, "not-m3")


@pytest.mark.parametrize("layout_name", ["vllm", "vllm-no-hybrid", "hkv", "partitioned"])
def test_one_group_of_128_token_blocks_holds_every_page(layout_name: str) -> None:
    layout = _layout(DEFAULT_60, layout_name, gpu="h100", available_kv_memory_bytes=40 * GIB, max_model_len=131072)
    (group,) = layout.groups
    assert group.block_size == 128
    assert len(group.layer_names) == 117
    assert layout.pools[0].bytes_per_block == 17_596_416
    if layout_name.startswith("vllm"):
        assert layout.pools[0].num_blocks == 2_440


def test_tensor_parallel_splits_kv_heads_not_the_index_key() -> None:
    layout = _layout(DEFAULT_60, gpu="h100", tp=4, available_kv_memory_bytes=40 * GIB, max_model_len=131072)
    assert layout.pools[0].bytes_per_block == 5_799_936


@pytest.mark.parametrize("block_size", [256, 512])
def test_a_multiple_of_128_is_taken(block_size: int) -> None:
    layout = _layout(DEFAULT_60, gpu="h100", block_size=block_size, available_kv_memory_bytes=40 * GIB,
                     max_model_len=131072)
    assert layout.groups[0].block_size == block_size
    assert layout.pools[0].bytes_per_block == 17_596_416 * block_size // 128


@pytest.mark.parametrize("block_size", [16, 64, 192])
def test_other_block_sizes_are_refused_naming_the_backends(block_size: int) -> None:
    with pytest.raises(InvalidInputError, match=rf"block_size {block_size}: vLLM's MiniMax-M3 sparse backends "
                                                r".*multiple of 128"):
        _layout(DEFAULT_60, gpu="h100", block_size=block_size, available_kv_memory_bytes=40 * GIB,
                max_model_len=131072)


# Parameter count (model_specs/param_count_minimax_m3.py).
# Hand count, MiniMax-M3-preview's shape (vLLM defaults: 60 layers, 57 sparse-attention and 57 MoE):
#   attention 6,144 x 8,192 (q) + 2 x 6,144 x 512 (k, v) + 8,192 x 6,144 (o) + 2 x 128 (qk norms) = 106,955,008
#   indexer 6,144 x 4 x 128 + 6,144 x 128 + 2 x 128 = 3,932,416 (57 layers)
#   dense MLP 3 x 6,144 x 12,288 = 226,492,416 (3 layers)
#   MoE 6,144 x 128 (router) + 128 x 3 x 6,144 x 3,072 + 3 x 6,144 x 3,072 (shared) = 7,305,166,848 (57 layers)
#   norms 2 x 6,144 per layer; embeddings and lm_head 2 x 200,064 x 6,144; final norm 6,144
#   60 x 106,967,296 + 57 x 3,932,416 + 3 x 226,492,416 + 57 x 7,305,166,848 + 2,458,386,432 + 6,144
#   = 426,174,565,632.
def test_preview_shape_parameter_count_by_hand() -> None:
    assert from_hf_config(DEFAULT_60, "minimax-m3").num_params == 426_174_565_632


TINY_OVERRIDES = dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16, index_head_dim=8,
                      index_n_heads=2, intermediate_size=24, dense_intermediate_size=40, shared_intermediate_size=20,
                      num_local_experts=5, num_experts_per_tok=2, vocab_size=100, rotary_dim=8, bos_token_id=1,
                      eos_token_id=2, num_hidden_layers=4)


@pytest.mark.parametrize("extra", [
    dict(layer_types=["full_attention", "minimax_m3_sparse", "full_attention", "minimax_m3_sparse"],
         mlp_layer_types=["dense", "sparse", "sparse", "sparse"]),
    # the checkpoint's own keys, which transformers' config class translates
    dict(sparse_attention_config={"sparse_attention_freq": [0, 0, 1, 1], "sparse_num_index_heads": 3,
                                  "sparse_index_dim": 4}, moe_layer_freq=[0, 1, 0, 1]),
    dict(tie_word_embeddings=True),
])
def test_parameter_count_equals_transformers(extra: dict) -> None:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = transformers.AutoConfig.for_model("minimax_m3_vl_text", **TINY_OVERRIDES, **extra)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config)
    expected = sum(p.numel() for p in model.parameters())
    assert from_hf_config(config.to_dict(), "m3-tiny").num_params == expected
