"""TP-independent descriptions of the cache-owning modules of a model.

A layer index can own more than one cache (Falcon-H1: attention and Mamba side by side), so a
model is a tuple of `CacheLayer`s, each naming its layer index and its module. `cache_spec()`
turns a description into the per-rank spec for given `CacheOptions`, or None for a layer that
owns no cache (KV sharing: it reads another layer's pages).
"""

from __future__ import annotations

from dataclasses import dataclass

from hkv.model_specs.cache_options import CacheOptions
from hkv.model_specs.cache_spec import AttentionCacheSpec, CacheKind, StateCacheSpec


@dataclass(frozen=True)
class AttentionDesc:
    layer_idx: int
    kind: CacheKind  # FULL | SLIDING | CHUNKED
    num_kv_heads: int  # whole model, before TP
    head_dim: int
    head_dim_v: int
    window_len: int | None = None
    chunk_len: int | None = None
    is_mla: bool = False
    kv_shared_with: int | None = None  # index of the layer whose pages this layer reads

    @property
    def name(self) -> str:
        return f"layers.{self.layer_idx}.attn"

    def cache_spec(self, opts: CacheOptions) -> AttentionCacheSpec | None:
        if self.kv_shared_with is not None:
            return None
        # MLA's latent is replicated across TP ranks; GQA heads are split, at least one per rank.
        heads = 1 if self.is_mla else max(1, self.num_kv_heads // opts.tp)
        return AttentionCacheSpec(
            self.kind, heads, self.head_dim, self.head_dim_v, opts.kv_dtype_bytes,
            window_len=self.window_len, chunk_len=self.chunk_len, is_mla=self.is_mla,
        )


@dataclass(frozen=True)
class RecurrentDesc:
    """Recurrent mixer state: conv `(conv_kernel_len-1, conv_dim/TP)` + ssm `(ssm_heads/TP, *ssm_dims)`.

    Mamba1: conv_dim = ssm_heads = intermediate, ssm_dims = (d_state,).
    Mamba2: conv_dim = intermediate + 2*n_groups*d_state, ssm_heads = n_heads, ssm_dims = (head_dim, d_state).
    Gated delta-net: conv_dim = 2*key_dim + value_dim, ssm_heads = v_heads, ssm_dims = (k_head_dim, v_head_dim).
    Lightning attention: no conv (conv_kernel_len 0), ssm_heads = heads, ssm_dims = (head_dim, head_dim).
    """

    layer_idx: int
    variant: str
    conv_kernel_len: int
    conv_dim: int
    ssm_heads: int
    ssm_dims: tuple[int, ...]
    default_conv_dtype_bytes: int
    default_ssm_dtype_bytes: int

    @property
    def name(self) -> str:
        return f"layers.{self.layer_idx}.mixer"

    def cache_spec(self, opts: CacheOptions) -> StateCacheSpec:
        conv_bytes = opts.conv_dtype_bytes or self.default_conv_dtype_bytes
        ssm_bytes = opts.ssm_dtype_bytes or self.default_ssm_dtype_bytes
        ssm_shape = (self.ssm_heads // opts.tp, *self.ssm_dims)
        if self.conv_kernel_len <= 1:
            return StateCacheSpec(self.variant, (ssm_shape,), (ssm_bytes,))
        conv_shape = (self.conv_kernel_len - 1, self.conv_dim // opts.tp)
        return StateCacheSpec(self.variant, (conv_shape, ssm_shape), (conv_bytes, ssm_bytes))


CacheLayer = AttentionDesc | RecurrentDesc
