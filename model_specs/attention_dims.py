"""Attention geometry of a model (KV heads, head sizes, window, chunk) and its AttentionDesc per layer."""

from __future__ import annotations

from dataclasses import dataclass

from hkv.model_specs.cache_spec import CacheKind
from hkv.model_specs.config_view import ConfigView
from hkv.model_specs.errors import InvalidConfigError
from hkv.model_specs.indexer_cache import DSA_FAMILIES
from hkv.model_specs.latent_attention_form import caches_expanded_heads, expanded_head_dim
from hkv.model_specs.layer_desc import AttentionDesc
from hkv.model_specs.layer_kinds import LayerKind

# Families whose full-attention layers are multi-head latent attention (one shared latent per token).
MLA_FAMILIES = frozenset({"deepseek_v2", "deepseek_v3", "kimi_linear", "glm4_moe_lite", "bailing_hybrid",
                          "axk1", "sarvam_mla", "longcat_flash"})

_CACHE_KIND = {LayerKind.FULL: CacheKind.FULL, LayerKind.SLIDING: CacheKind.SLIDING,
               LayerKind.CHUNKED: CacheKind.CHUNKED}


@dataclass(frozen=True)
class AttentionDims:
    """What one attention layer caches per token; `head_dim_v` 0 and one head for MLA's latent."""

    num_kv_heads: int
    head_dim: int
    head_dim_v: int
    is_mla: bool


def attention_dims(view: ConfigView) -> AttentionDims:
    if caches_expanded_heads(view):  # a latent in the config, per-head K/V in vLLM's pages
        head_dim = expanded_head_dim(view)
        return AttentionDims(num_kv_heads=num_query_heads(view), head_dim=head_dim, head_dim_v=head_dim,
                             is_mla=False)
    if view.family in MLA_FAMILIES or view.family in DSA_FAMILIES:
        # The cache holds the compressed KV latent plus the shared RoPE key (DeepSeek-V2 MLA).
        latent = view.int_value("kv_lora_rank") + view.int_value("qk_rope_head_dim")
        return AttentionDims(num_kv_heads=1, head_dim=latent, head_dim_v=0, is_mla=True)
    head_dim = model_head_dim(view)
    return AttentionDims(num_kv_heads=num_kv_heads(view), head_dim=head_dim, head_dim_v=head_dim,
                         is_mla=False)


def num_query_heads(view: ConfigView) -> int:
    return view.int_value("num_attention_heads")


def num_kv_heads(view: ConfigView) -> int:
    """num_key_value_heads; absent means multi-head attention (one KV head per query head).
    Zamba2's shared attention is multi-head in vLLM whatever num_key_value_heads says."""
    if view.family == "zamba2":
        return num_query_heads(view)
    return view.int_value("num_key_value_heads", num_query_heads(view))


def model_head_dim(view: ConfigView) -> int:
    """head_dim, else Nemotron-H's attention_head_dim, else hidden_size // num_attention_heads."""
    by_division = view.int_value("hidden_size") // num_query_heads(view)
    if view.family == "cohere2":
        return by_division  # Cohere2Config always overwrites head_dim with this
    if not view.has("head_dim") and view.has("attention_head_dim"):
        return view.int_value("attention_head_dim")
    if view.family == "zamba2":  # Zamba2Config: attention over 2 x hidden (the block sees [x, x_orig])
        return 2 * view.int_value("hidden_size") // num_query_heads(view)
    return view.int_value("head_dim", by_division)


def attention_desc(view: ConfigView, dims: AttentionDims, layer_idx: int, kind: LayerKind) -> AttentionDesc:
    cache_kind = _CACHE_KIND[kind]
    window = view.int_value("sliding_window") if kind is LayerKind.SLIDING else None
    chunk = view.int_value("attention_chunk_size") if kind is LayerKind.CHUNKED else None
    for name, size in (("sliding_window", window), ("attention_chunk_size", chunk)):
        if size is not None and size < 1:
            raise InvalidConfigError(f"{name}={size} must be >= 1 for layer {layer_idx}")
    return AttentionDesc(
        layer_idx=layer_idx, kind=cache_kind, num_kv_heads=dims.num_kv_heads, head_dim=dims.head_dim,
        head_dim_v=dims.head_dim_v, window_len=window, chunk_len=chunk, is_mla=dims.is_mla,
        covered_window_len=_covered_window(view, kind),
    )


def _covered_window(view: ConfigView, kind: LayerKind) -> int | None:
    """A model-wide `sliding_window` that covers the whole context (Mistral/Ministral, StarCoder2 without
    layer_types): the layer attends fully, but vLLM still gives it a sliding-window cache."""
    if kind is not LayerKind.FULL or view.family not in ("mistral", "starcoder2") or view.get("layer_types"):
        return None
    window, max_len = view.get("sliding_window"), view.get("max_position_embeddings")
    if isinstance(window, int) and isinstance(max_len, int) and window >= max_len:
        return window
    return None
