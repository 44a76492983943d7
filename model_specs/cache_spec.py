"""Per-rank cache specs: what one cache-owning module of one tensor-parallel rank keeps.

A spec owns its arithmetic (bytes per token, page bytes, state bytes). Specs are frozen and
hashable: grouping buckets cache layers by spec equality, exactly like vLLM.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from math import prod


class CacheKind(str, Enum):
    """The manager kind a cache layer needs; one manager class per kind in the runtime."""

    FULL = "full"
    SLIDING = "sliding"
    CHUNKED = "chunked"
    RECURRENT = "recurrent"
    CIRCULAR = "circular"  # a fixed ring per request in one block, never prefix cached (Step5's CSA tail ring)


class CacheRole(str, Enum):
    """What an attention-shaped page holds. KV: the layer's keys/values (or MLA latent). INDEXER: the
    DeepSeek Sparse Attention lightning indexer's quantized keys (model_specs/indexer_cache.py): one
    per-token vector, paged and freed exactly like full attention, but a distinct spec (vLLM's
    MLAAttentionSpec with cache_role INDEXER) whose bytes do not follow --kv-cache-dtype."""

    KV = "kv"
    INDEXER = "indexer"


@dataclass(frozen=True)
class AttentionCacheSpec:
    """Paged K/V for one attention layer on one rank.

    MLA stores one latent per token (`num_kv_heads=1`, `head_dim=kv_lora_rank+qk_rope_head_dim`,
    `head_dim_v=0`) and is replicated across TP ranks.
    """

    kind: CacheKind
    num_kv_heads: int  # per rank
    head_dim: int
    head_dim_v: int
    dtype_bytes: int
    window_len: int | None = None  # sliding window W (tokens), SLIDING only
    chunk_len: int | None = None  # local chunk C (tokens), CHUNKED only
    is_mla: bool = False
    role: CacheRole = CacheRole.KV

    def __post_init__(self) -> None:
        assert self.kind is not CacheKind.RECURRENT
        assert (self.window_len is not None) == (self.kind is CacheKind.SLIDING)
        assert (self.chunk_len is not None) == (self.kind is CacheKind.CHUNKED)

    @property
    def bytes_per_token(self) -> int:
        return self.num_kv_heads * (self.head_dim + self.head_dim_v) * self.dtype_bytes

    def page_size_bytes(self, block_size: int) -> int:
        return block_size * self.bytes_per_token

    def kept_len(self, seq_len: int) -> int:
        """Tokens a request of `seq_len` tokens must keep resident for the next step."""
        if self.kind is CacheKind.SLIDING:
            assert self.window_len is not None
            return min(self.window_len, seq_len)
        if self.kind is CacheKind.CHUNKED:
            assert self.chunk_len is not None
            return min(self.chunk_len, seq_len)
        return seq_len

    def ideal_bytes(self, seq_len: int) -> int:
        return self.kept_len(seq_len) * self.bytes_per_token

    def as_full(self) -> AttentionCacheSpec:
        """The same layer promoted to full attention (vLLM --disable-hybrid-kv-cache-manager)."""
        return AttentionCacheSpec(
            CacheKind.FULL, self.num_kv_heads, self.head_dim, self.head_dim_v, self.dtype_bytes,
            is_mla=self.is_mla, role=self.role,
        )


@dataclass(frozen=True)
class StateCacheSpec:
    """Recurrent state (Mamba1/2, gated delta-net, lightning attention) of one layer on one rank.

    `shapes[i]` is one state tensor's shape per request and `dtype_bytes[i]` its element size,
    e.g. Mamba2: conv `(conv_kernel-1, conv_dim/TP)` and ssm `(n_heads/TP, head_dim, d_state)`.
    """

    variant: str  # "mamba1" | "mamba2" | "gdn" | "lightning" | "kda"
    shapes: tuple[tuple[int, ...], ...]
    dtype_bytes: tuple[int, ...]

    kind = CacheKind.RECURRENT

    def __post_init__(self) -> None:
        assert len(self.shapes) == len(self.dtype_bytes)

    @property
    def state_bytes(self) -> int:
        return sum(prod(s) * b for s, b in zip(self.shapes, self.dtype_bytes))

    def ideal_bytes(self, seq_len: int) -> int:
        return self.state_bytes


LayerCacheSpec = AttentionCacheSpec | StateCacheSpec
