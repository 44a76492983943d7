"""A short-convolution state cached as a sliding window of its own block size (Inkling).

vLLM 0.32's Inkling (vllm/models/inkling/nvidia/sconv_swa_attn.py, `InklingConvState`) keeps the
last tokens of each decoder layer's four short-conv streams (K, V, attention output, MLP output)
not as a Mamba-style state but in a paged `SlidingWindowSpec` whose window and block size are both
the conv kernel (4 tokens): the conv reads a token's kernel - 1 predecessors from the pages. The
streams are packed head-major: per KV head one row of width
next_pow2(2 * head_dim + 2 * hidden_size / num_kv_heads), `head_size_v` 0. The block size is the
kernel's, whatever `--block-size` says; page-size unification may still grow it (vLLM multiplies
the block of a page that divides the largest).
"""

from __future__ import annotations

from dataclasses import dataclass

from hkv.model_specs.cache_options import CacheOptions
from hkv.model_specs.cache_spec import AttentionCacheSpec, CacheKind
from hkv.model_specs.errors import InvalidConfigError
from hkv.model_specs.layer_desc import AttentionDesc


@dataclass(frozen=True)
class ConvStateCacheSpec(AttentionCacheSpec):
    """A sliding-window page whose tokens per block the engine fixes (`block_len`), not the plan.

    A distinct type, so it never buckets with a plain sliding layer of equal geometry; promoted to
    full attention (`as_full`, vLLM without the hybrid manager) it becomes a plain full spec paged
    at the plan's block size, as vLLM's `_promote_local_kv_cache_specs` re-blocks it."""

    block_len: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        assert self.kind is CacheKind.SLIDING and self.block_len >= 1, "a conv state is a sliding page"


def packed_conv_width(head_dim: int, hidden_size: int, num_kv_heads: int) -> int:
    """Per-head row of the four packed streams, padded to a power of two (InklingConvState)."""
    raw = 2 * head_dim + 2 * (hidden_size // num_kv_heads)
    return 1 << (raw - 1).bit_length()


@dataclass(frozen=True)
class ConvStateDesc(AttentionDesc):
    """One decoder layer's conv-state cache: `num_kv_heads` rows (split over TP ranks) of
    `head_dim` (the packed width) elements of `state_dtype_bytes` (the model dtype: vLLM keeps it
    there whatever --kv-cache-dtype says), window and block of `kernel_len` tokens."""

    kernel_len: int = 0
    state_dtype_bytes: int = 2

    @property
    def name(self) -> str:
        return f"layers.{self.layer_idx}.conv_state"

    def cache_spec(self, opts: CacheOptions, *, engine_windows: bool = False) -> AttentionCacheSpec | None:
        """Raises InvalidConfigError where vLLM asserts: fewer KV heads than TP ranks."""
        if opts.tp > self.num_kv_heads:
            raise InvalidConfigError(
                f"tp {opts.tp} exceeds the {self.num_kv_heads} KV heads of layer {self.layer_idx}: vLLM's Inkling "
                f"conv-state cache needs a whole KV head per rank (tp <= {self.num_kv_heads})", fields=("tp",))
        return ConvStateCacheSpec(
            CacheKind.SLIDING, max(1, self.num_kv_heads // opts.tp), self.head_dim, 0, self.state_dtype_bytes,
            window_len=self.kernel_len, block_len=self.kernel_len,
        )
