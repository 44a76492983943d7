"""Sparse-attention index-key caches: the DeepSeek Sparse Attention (DSA) lightning indexer's, and
MiniMax-M3's (bottom of this file).

DSA models (DeepSeek-V3.2, GLM-5 `glm_moe_dsa`, Hunyuan `hy_v4`) run MLA, and in front of it a
small "lightning indexer" that scores every cached token and picks the top-k the MLA layer attends
to. The indexer keeps its own key per token per layer, which vLLM caches beside the MLA latent:

- bytes per token: `index_head_dim` fp8 values plus one fp32 scale per 128 of them, stored as uint8
  whatever --kv-cache-dtype says: 128 + 4 = 132 bytes for index_head_dim 128
  (vLLM 0.32 model_executor/models/deepseek_v2.py, Indexer.__init__: `head_dim=self.head_dim +
  self.head_dim // self.quant_block_size * 4, dtype=torch.uint8`, quant_block_size 128);
- spec: DeepseekV32IndexerCache.get_kv_cache_spec returns an MLAAttentionSpec (one head, no V,
  `cache_role=SparseCacheRole.INDEXER`) at the cache's block size: a full-attention spec, so its
  blocks live exactly as long as the MLA layer's (one per block_size tokens, freed with the
  request, prefix-cacheable). vLLM groups it with the MLA layers as one UniformTypeKVCacheSpecs
  group whose block holds every layer's page (v1/kv_cache_interface.py, is_uniform_type: one
  block size, all FullAttentionSpec subclasses);
- which layers build one: with IndexCache (`index_topk_freq` > 1 or `index_topk_pattern`), only
  the layers that compute their own top-k; the others reuse the previous indexer's choice and cache
  nothing for it (vLLM 0.32 models/deepseek_v32/attention.py, DeepseekV32Attention: `skip_topk`).
  Hunyuan-V4 reads the per-layer `indexer_types` ("full"/"shared") first
  (models/hy_v4/nvidia/attention.py, compute_skip_topk_layers).

hkv models the indexer as an attention-shaped cache layer of its own (`CacheRole.INDEXER`): a
full-attention spec with its own bytes, so the planner pages it as vLLM does and the runtime's
full-attention manager serves it unchanged.
"""

from __future__ import annotations

from hkv.model_specs.cache_spec import CacheKind, CacheRole
from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.errors import InvalidConfigError
from hkv.model_specs.layer_desc import AttentionDesc

# fp8 values share one fp32 scale per this many (vLLM Indexer.quant_block_size, "TODO: get from config").
INDEXER_QUANT_BLOCK_LEN = 128
INDEXER_SCALE_BYTES = 4  # fp32
INDEXER_ELEMENT_BYTES = 1  # the cache tensor is uint8
# vLLM's default for index_skip_topk_offset when the config has none.
DEFAULT_SKIP_TOPK_OFFSET = 2
# Families whose `indexer_types` list decides which layers build an indexer (vLLM reads it for
# Hunyuan-V4 only; DeepSeek-V3.2 and GLM-5 go by index_topk_freq / index_topk_pattern).
INDEXER_TYPES_FAMILIES = frozenset({"hy_v4"})


def indexer_key_bytes(index_head_dim: int) -> int:
    """Bytes one token's indexer key takes: fp8 values plus one fp32 scale per 128 of them."""
    return index_head_dim + index_head_dim // INDEXER_QUANT_BLOCK_LEN * INDEXER_SCALE_BYTES


def indexer_desc(view: ConfigView, layer_idx: int) -> AttentionDesc:
    """The index-key cache of layer `layer_idx`, as the family's vLLM model builds it."""
    return _INDEX_DESC_BY_FAMILY.get(view.family, dsa_indexer_desc)(view, layer_idx)


def dsa_indexer_desc(view: ConfigView, layer_idx: int) -> AttentionDesc:
    """The DSA indexer key cache of layer `layer_idx`: one 'head' of indexer_key_bytes uint8, no V."""
    key_bytes = indexer_key_bytes(view.int_value("index_head_dim"))
    return AttentionDesc(layer_idx=layer_idx, kind=CacheKind.FULL, num_kv_heads=1, head_dim=key_bytes,
                         head_dim_v=0, is_mla=True, role=CacheRole.INDEXER,
                         fixed_dtype_bytes=INDEXER_ELEMENT_BYTES)


def indexer_sharing_layers(view: ConfigView, num_layers: int) -> frozenset[int]:
    """Layers that reuse another layer's top-k and so cache no indexer keys (IndexCache)."""
    if view.family in INDEXER_TYPES_FAMILIES and view.get("indexer_types") is not None:
        return _shared_by_types(view.get("indexer_types"), num_layers)
    pattern = view.get("index_topk_pattern")
    if pattern is not None:
        if not isinstance(pattern, str) or set(pattern) - {"F", "S"}:
            raise InvalidConfigError(f"index_topk_pattern must be a string of 'F' (own indexer) and 'S' "
                                     f"(shared) per layer, got {pattern!r}")
        return frozenset(i for i, mark in enumerate(pattern[:num_layers]) if mark == "S")
    freq = view.value("index_topk_freq", 1)
    offset = view.value("index_skip_topk_offset", DEFAULT_SKIP_TOPK_OFFSET)
    if isinstance(freq, bool) or not isinstance(freq, int) or freq < 1:
        raise InvalidConfigError(f"index_topk_freq must be a positive integer, got {freq!r}")
    if isinstance(offset, bool) or not isinstance(offset, int):
        raise InvalidConfigError(f"index_skip_topk_offset must be an integer, got {offset!r}")
    return frozenset(i for i in range(num_layers) if max(i - offset + 1, 0) % freq)


def _shared_by_types(types: object, num_layers: int) -> frozenset[int]:
    if not isinstance(types, list) or len(types) != num_layers or set(types) - {"full", "shared"}:
        raise InvalidConfigError(f"indexer_types must list 'full' or 'shared' for each of the {num_layers} "
                                 f"layers, got {types!r}")
    return frozenset(i for i, kind in enumerate(types) if kind == "shared")


# Families whose layers are DSA: MLA with an indexer in front (vLLM serves all three with the DSA model code).
DSA_FAMILIES = frozenset({"deepseek_v32", "glm_moe_dsa", "hy_v4"})

# MiniMax-M3's sparse layers: GQA K/V plus an index key per token (vLLM 0.32 / 0.33
# models/minimax_m3/common/indexer.py, MiniMaxM3IndexerCache.get_kv_cache_spec: MLAAttentionSpec with
# num_kv_heads=1, head_size=sparse_index_dim, dtype bfloat16, cache_role=SparseCacheRole.INDEXER; the
# dtype is --attention-config indexer_kv_dtype, whose "auto" resolves to "bf16" in
# nvidia/model.py MiniMaxM3SparseAttention). No V and no scale: 128 dims x 2 B = 256 B per token.
MINIMAX_M3_FAMILIES = frozenset({"minimax_m3_text", "minimax_m3_vl_text"})
MINIMAX_M3_INDEX_KEY_BYTES = 2  # bf16, whatever --kv-cache-dtype says
MINIMAX_M3_DEFAULT_INDEX_DIM = 128  # MiniMaxM3TextConfig's sparse_index_dim


def minimax_m3_index_dim(view: ConfigView) -> int:
    """sparse_attention_config.sparse_index_dim (vLLM's key), else transformers' index_head_dim."""
    sparse_cfg = view.get("sparse_attention_config") or {}
    dim = sparse_cfg.get("sparse_index_dim") or view.value("index_head_dim", MINIMAX_M3_DEFAULT_INDEX_DIM)
    if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
        raise InvalidConfigError(f"sparse_attention_config.sparse_index_dim must be a positive integer, got {dim!r}")
    return dim


def minimax_m3_index_desc(view: ConfigView, layer_idx: int) -> AttentionDesc:
    """MiniMax-M3's index-key cache of layer `layer_idx`: one 'head' of sparse_index_dim bf16, no V,
    replicated across TP ranks like an MLA latent (vLLM's spec has num_kv_heads=1 on every rank)."""
    return AttentionDesc(layer_idx=layer_idx, kind=CacheKind.FULL, num_kv_heads=1,
                         head_dim=minimax_m3_index_dim(view), head_dim_v=0, is_mla=True, role=CacheRole.INDEXER,
                         fixed_dtype_bytes=MINIMAX_M3_INDEX_KEY_BYTES)


_INDEX_DESC_BY_FAMILY = {family: minimax_m3_index_desc for family in MINIMAX_M3_FAMILIES}
