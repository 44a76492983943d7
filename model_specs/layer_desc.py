"""TP-independent descriptions of the cache-owning modules of a model.

A layer index can own more than one cache (Falcon-H1: attention and Mamba side by side), so a
model is a tuple of `CacheLayer`s, each naming its layer index and its module. `cache_spec()`
turns a description into the per-rank spec for given `CacheOptions`, or None for a layer that
owns no cache (KV sharing: it reads another layer's pages).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from hkv.model_specs.cache_options import CacheOptions
from hkv.model_specs.cache_spec import AttentionCacheSpec, CacheKind, CacheRole, StateCacheSpec


# Recurrent variants whose conv state vLLM lengthens by the speculative tokens (their mixers pass
# num_spec to the state-shape calculator: GatedDeltaNet, MambaMixer2, ShortConv, KDA).
SPEC_CONV_VARIANTS = frozenset({"gdn", "mamba2", "short_conv", "kda"})


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
    # A configured window that covers the whole context (the layer is full attention; vLLM
    # still caches it as sliding, which costs one block more per request).
    covered_window_len: int | None = None
    role: CacheRole = CacheRole.KV  # INDEXER: a DSA lightning-indexer key cache (indexer_cache.py)
    fixed_dtype_bytes: int | None = None  # element bytes whatever --kv-cache-dtype says (the indexer's uint8)

    @property
    def name(self) -> str:
        return f"layers.{self.layer_idx}.{_MODULE_NAME[self.role]}"

    def cache_spec(self, opts: CacheOptions, *, engine_windows: bool = False) -> AttentionCacheSpec | None:
        """Per-rank spec; `engine_windows` applies a covered window as vLLM does."""
        if self.kv_shared_with is not None:
            return None
        if engine_windows and self.covered_window_len is not None:
            return replace(self, kind=CacheKind.SLIDING, window_len=self.covered_window_len,
                           covered_window_len=None).cache_spec(opts)
        # MLA's latent is replicated across TP ranks; GQA heads are split, at least one per rank.
        heads = 1 if self.is_mla else max(1, self.num_kv_heads // opts.tp)
        return AttentionCacheSpec(
            self.kind, heads, self.head_dim, self.head_dim_v, self.fixed_dtype_bytes or opts.kv_dtype_bytes,
            window_len=self.window_len, chunk_len=self.chunk_len, is_mla=self.is_mla, role=self.role,
        )


_MODULE_NAME = {CacheRole.KV: "attn", CacheRole.INDEXER: "indexer"}


# Variants whose state vLLM keeps in the conv (mamba_cache) dtype whatever --mamba-ssm-cache-dtype
# says: lightning attention (MambaStateDtypeCalculator.linear_attention_state_dtype).
STATE_IN_CONV_DTYPE = frozenset({"lightning"})


@dataclass(frozen=True)
class RecurrentDesc:
    """Recurrent mixer state: conv `(conv_kernel_len-1, conv_dim/TP)` + ssm `(ssm_heads/TP, *ssm_dims)`.

    Mamba1: conv_dim = ssm_heads = intermediate, ssm_dims = (d_state,).
    Mamba2: conv_dim = intermediate + 2*n_groups*d_state, ssm_heads = n_heads, ssm_dims = (head_dim, d_state).
    Gated delta-net: conv_dim = 2*key_dim + value_dim, ssm_heads = v_heads, ssm_dims = (k_head_dim, v_head_dim).
    Lightning attention: no conv (conv_kernel_len 0), ssm_heads = heads, ssm_dims = (head_dim, head_dim).
    Short conv (LFM2): conv only; ssm_heads 0 and ssm_dims () mean no ssm tensor.
    """

    layer_idx: int
    variant: str
    conv_kernel_len: int
    conv_dim: int
    ssm_heads: int
    ssm_dims: tuple[int, ...]
    default_conv_dtype_bytes: int
    default_ssm_dtype_bytes: int
    conv_groups: int = 0  # Mamba2 n_groups inside conv_dim; 0 for other variants
    conv_group_dim: int = 0  # Mamba2 d_state

    @property
    def name(self) -> str:
        return f"layers.{self.layer_idx}.mixer"

    def conv_dim_per_rank(self, tp: int) -> int:
        """conv_dim / TP; Mamba2 B/C groups that do not divide TP are replicated first
        (n_groups 1 at TP 2 becomes 2 groups: +2 x d_state channels), as vLLM's
        MambaStateShapeCalculator.extra_groups_for_head_shards does."""
        extra = 0 if not self.conv_groups or self.conv_groups % tp == 0 else tp - self.conv_groups
        return (self.conv_dim + 2 * extra * self.conv_group_dim) // tp

    def cache_spec(self, opts: CacheOptions, *, engine_windows: bool = False) -> StateCacheSpec:
        conv_bytes = opts.conv_dtype_bytes or self.default_conv_dtype_bytes
        ssm_bytes = opts.ssm_dtype_bytes or self.default_ssm_dtype_bytes
        if self.variant in STATE_IN_CONV_DTYPE:
            ssm_bytes = conv_bytes
        ssm_shape = (self.ssm_heads // opts.tp, *self.ssm_dims)
        if self.conv_kernel_len <= 1:
            return StateCacheSpec(self.variant, (ssm_shape,), (ssm_bytes,))
        # vLLM keeps the draft tokens' inputs too: kernel - 1 + num_speculative_tokens columns
        # (MambaStateShapeCalculator's num_spec: gated delta net, Mamba2, short conv, KDA).
        spec_rows = opts.speculative_tokens if self.variant in SPEC_CONV_VARIANTS else 0
        conv_shape = (self.conv_kernel_len - 1 + spec_rows, self.conv_dim_per_rank(opts.tp))
        if not self.ssm_dims:
            return StateCacheSpec(self.variant, (conv_shape,), (conv_bytes,))
        return StateCacheSpec(self.variant, (conv_shape, ssm_shape), (conv_bytes, ssm_bytes))


CacheLayer = AttentionDesc | RecurrentDesc
