"""PagedKVCache: the KV memory a Layout describes, one allocation per pool, viewed per layer.

Pool p is one buffer of num_blocks x bytes_per_block bytes, layer-outer:

    pool p: | region 0 | region 1 | ... | region num_slots-1 |    each num_blocks x page_bytes,
                                                                page_bytes = bytes_per_block / num_slots

Layer j of a group (its j-th entry in `layer_names`) uses region j of the group's pool, and
block b of the group is page b of that region. Layers of different groups share regions: block
ids belong to one group at a time, so two groups never touch the same page.

- Attention pages hold K then V of `block_size` tokens, so a region reads as
  [num_blocks, 2, block_size, num_kv_heads, head_dim] (pages padded by the planner keep their
  padding at the end, outside the view) and the layer's caches are the strided views
  key = [:, 0] and value = [:, 1], which the kernels accept.
- MLA pages hold one latent of `block_size` tokens (kv_lora_rank + qk_rope_head_dim values per
  token, the planner's MLA spec: one head, no V), so a region reads as
  [num_blocks, block_size, 1, latent_dim] and the layer's key and value caches are that one view
  (mla_attention_hook.py reads it as both).
- Recurrent pages hold one request's state: the spec's tensors one after the other from the
  page's start (Mamba: conv (kernel-1, conv_dim) then ssm (heads, ...)), each in its own dtype;
  a region reads as one [num_blocks, *shape] view per tensor. In the vllm layout the state sits
  in an attention-sized page (the planner's padding follows it); in the hkv and partitioned
  layouts it has a pool of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import prod

import torch

from hkv.model_specs.cache_spec import AttentionCacheSpec, StateCacheSpec
from hkv.model_specs.errors import InputError
from hkv.planner.layout import KVCacheGroup, Layout, Pool


class UnsupportedLayoutError(InputError):
    """The Layout cannot be allocated as paged memory for this model (dtype mismatch, page too small, ...)."""


@dataclass(frozen=True)
class LayerCaches:
    """One attention layer's place in the pools: its group, its region and the two cache views."""

    group_id: int
    region: int
    key_cache: torch.Tensor  # [num_blocks, block_size, num_kv_heads, head_dim]
    value_cache: torch.Tensor  # MLA: the key cache itself (the latent)


@dataclass(frozen=True)
class LayerStates:
    """One recurrent layer's place in the pools: per state tensor a [num_blocks, *shape] view."""

    group_id: int
    region: int
    tensors: tuple[torch.Tensor, ...]  # the spec's `shapes`, in order, block-major
    roles: tuple[str, ...]  # per tensor "conv" or "ssm" (see `state_roles`)

    @property
    def conv(self) -> torch.Tensor | None:
        """[num_blocks, kernel-1, conv_dim], or None (lightning attention keeps no conv)."""
        return self.tensors[self.roles.index("conv")] if "conv" in self.roles else None

    @property
    def ssm(self) -> torch.Tensor | None:
        """[num_blocks, heads, ...], or None (a short conv keeps only its conv inputs)."""
        return self.tensors[self.roles.index("ssm")] if "ssm" in self.roles else None

    @property
    def bytes_per_block(self) -> int:
        return sum(t[0].numel() * t.element_size() for t in self.tensors)


# A one-tensor state is conv inputs for these variants, an ssm / recurrent matrix for the others
# (RecurrentDesc.cache_spec drops the conv tensor of kernels <= 1 and the ssm of ssm-less layers).
CONV_ONLY_VARIANTS = frozenset({"short_conv"})


def state_roles(spec: StateCacheSpec) -> tuple[str, ...]:
    if len(spec.shapes) == 2:
        return ("conv", "ssm")
    return ("conv",) if spec.variant in CONV_ONLY_VARIANTS else ("ssm",)


def state_dtype_preference(state_dtypes: Sequence[torch.dtype], dtype: torch.dtype) -> tuple[torch.dtype, ...]:
    """The dtypes a state tensor may take, most preferred first: the given ones, then the
    model's, then float32."""
    return tuple(dict.fromkeys((*state_dtypes, dtype, torch.float32)))


def state_dtype(dtype_bytes: int, preferred: Sequence[torch.dtype]) -> torch.dtype:
    """The first dtype of `preferred` whose element is `dtype_bytes` long; UnsupportedLayoutError
    when none is (e.g. an fp8 state asked of a run that has no fp8 dtype in mind)."""
    for dtype in preferred:
        if torch.empty((), dtype=dtype).element_size() == dtype_bytes:
            return dtype
    names = ", ".join(str(d).removeprefix("torch.") for d in preferred)
    raise UnsupportedLayoutError(f"the layout plans {dtype_bytes}-byte recurrent state elements; "
                                 f"hkv run keeps states in {names}")


class PagedKVCache:
    """Allocates every pool of `layout` on `device` and hands out per-layer views.

    `dtype` is the element type of the K/V (the model's compute dtype); its size must be the
    planner's `spec.dtype_bytes`, so the allocation is byte for byte what the Layout planned.
    A recurrent state tensor takes the first of `state_dtypes` (default: `dtype`, then float32)
    whose size is the one the Layout planned for it.
    """

    def __init__(self, layout: Layout, dtype: torch.dtype, device: torch.device | str,
                 state_dtypes: Sequence[torch.dtype] = ()) -> None:
        self.layout = layout
        self.dtype = dtype
        self.device = torch.device(device)
        self.state_dtypes = state_dtype_preference(state_dtypes, dtype)
        elem = torch.empty((), dtype=dtype).element_size()
        slots = {p.pool_id: p for p in layout.pools}
        for g in layout.groups:
            _CHECKS[type(g.spec)](g, elem)
            pool = slots[g.pool_id]
            if g.page_size_bytes * pool.num_slots != pool.bytes_per_block:
                raise UnsupportedLayoutError(
                    f"{g.layer_names[0]}: page of {g.page_size_bytes} bytes x {pool.num_slots} slots is not "
                    f"pool {pool.pool_id}'s {pool.bytes_per_block} bytes per block")
        # Uninitialized: every slot is written before it is read (slot mappings for K/V, the
        # kernels read only slots below seq_len; states only once a step has stored them), and
        # zeroing gigabytes would cost seconds of start-up.
        self.raw_pools: dict[int, torch.Tensor] = {
            pool.pool_id: torch.empty(pool.num_blocks * pool.bytes_per_block, dtype=torch.int8,
                                      device=self.device)
            for pool in layout.pools
        }
        self.layers: dict[int, LayerCaches] = {}  # attention layer index -> its caches
        self.states: dict[int, LayerStates] = {}  # recurrent layer index -> its state views
        for group_id, g in enumerate(layout.groups):
            for region, layer_idx in enumerate(g.layer_ids):
                if isinstance(g.spec, StateCacheSpec):
                    self.states[layer_idx] = LayerStates(group_id, region, self._state_views(g, region),
                                                          state_roles(g.spec))
                else:
                    key, value = self._region_views(g, region, elem)
                    self.layers[layer_idx] = LayerCaches(group_id, region, key, value)

    @property
    def num_bytes(self) -> int:
        """Bytes actually allocated, all pools together."""
        return sum(t.numel() * t.element_size() for t in self.raw_pools.values())

    def _pool(self, g: KVCacheGroup) -> Pool:
        return next(p for p in self.layout.pools if p.pool_id == g.pool_id)

    def _typed(self, pool_id: int, dtype: torch.dtype) -> torch.Tensor:
        return self.raw_pools[pool_id].view(dtype)

    def _region_views(self, g: KVCacheGroup, region: int, elem: int) -> tuple[torch.Tensor, torch.Tensor]:
        pool = self._pool(g)
        spec = g.spec
        assert isinstance(spec, AttentionCacheSpec)
        page_elems = g.page_size_bytes // elem
        heads, dim, size = spec.num_kv_heads, spec.head_dim, g.block_size
        token_elems = heads * dim
        parts = 1 if spec.is_mla else 2  # an MLA page holds the latent only
        # kv: [num_blocks, parts, block_size, num_kv_heads, head_dim] over region `region`
        kv = self._typed(g.pool_id, self.dtype).as_strided(
            (pool.num_blocks, parts, size, heads, dim),
            (page_elems, size * token_elems, token_elems, dim, 1),
            region * pool.num_blocks * page_elems,
        )
        return kv[:, 0], kv[:, parts - 1]

    def _state_views(self, g: KVCacheGroup, region: int) -> tuple[torch.Tensor, ...]:
        pool = self._pool(g)
        spec = g.spec
        assert isinstance(spec, StateCacheSpec)
        region_offset = region * pool.num_blocks * g.page_size_bytes  # bytes
        views = []
        offset = 0  # bytes from the page's start
        for shape, nbytes in zip(spec.shapes, spec.dtype_bytes, strict=True):
            dtype = state_dtype(nbytes, self.state_dtypes)
            if g.page_size_bytes % nbytes or (region_offset + offset) % nbytes:
                raise UnsupportedLayoutError(
                    f"{g.layer_names[0]}: a {nbytes}-byte state tensor at byte {offset} of a "
                    f"{g.page_size_bytes}-byte page is not aligned to its element")
            numel = prod(shape)
            strides = tuple(prod(shape[i + 1:]) for i in range(len(shape)))
            views.append(self._typed(g.pool_id, dtype).as_strided(
                (pool.num_blocks, *shape), (g.page_size_bytes // nbytes, *strides),
                (region_offset + offset) // nbytes))
            offset += numel * nbytes
        return tuple(views)


def _check_attention(g: KVCacheGroup, elem: int) -> None:
    spec = g.spec
    assert isinstance(spec, AttentionCacheSpec)
    if spec.is_mla and (spec.num_kv_heads, spec.head_dim_v) != (1, 0):
        raise UnsupportedLayoutError(
            f"{g.layer_names[0]}: an MLA page holds one latent head and no V, got {spec.num_kv_heads} "
            f"heads and head_dim_v {spec.head_dim_v}")
    if not spec.is_mla and spec.head_dim != spec.head_dim_v:
        raise UnsupportedLayoutError(
            f"{g.layer_names[0]}: only K and V of equal head size are supported "
            f"(head_dim {spec.head_dim}, head_dim_v {spec.head_dim_v})")
    if spec.dtype_bytes != elem:
        raise UnsupportedLayoutError(
            f"{g.layer_names[0]}: the layout plans {spec.dtype_bytes}-byte K/V elements, the model "
            f"computes in {elem}-byte ones")
    if spec.page_size_bytes(g.block_size) > g.page_size_bytes or g.page_size_bytes % elem:
        raise UnsupportedLayoutError(f"{g.layer_names[0]}: page of {g.page_size_bytes} bytes cannot hold "
                                     f"{g.block_size} tokens of K/V")


def _check_state(g: KVCacheGroup, elem: int) -> None:
    spec = g.spec
    assert isinstance(spec, StateCacheSpec)
    if spec.state_bytes > g.page_size_bytes:
        raise UnsupportedLayoutError(f"{g.layer_names[0]}: page of {g.page_size_bytes} bytes cannot hold "
                                     f"a {spec.state_bytes}-byte recurrent state")


_CHECKS = {AttentionCacheSpec: _check_attention, StateCacheSpec: _check_state}
