"""PagedKVCache: the KV memory a Layout describes, one allocation per pool, viewed per layer.

Pool p is one buffer of num_blocks x bytes_per_block bytes, layer-outer:

    pool p: | region 0 | region 1 | ... | region num_slots-1 |    each num_blocks x page_bytes,
                                                                page_bytes = bytes_per_block / num_slots

Layer j of a group (its j-th entry in `layer_names`) uses region j of the group's pool, and
block b of the group is page b of that region. Layers of different groups share regions: block
ids belong to one group at a time, so two groups never touch the same page. One page holds K then
V of `block_size` tokens, so a region reads as [num_blocks, 2, block_size, num_kv_heads, head_dim]
(pages padded by the planner keep their padding at the end, outside the view) and the layer's
caches are the strided views key = [:, 0] and value = [:, 1], which the kernels accept.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from hkv.model_specs.cache_spec import AttentionCacheSpec
from hkv.model_specs.errors import InputError
from hkv.planner.layout import KVCacheGroup, Layout


class UnsupportedLayoutError(InputError):
    """The Layout cannot be allocated as paged attention memory (recurrent groups, MLA, ...)."""


@dataclass(frozen=True)
class LayerCaches:
    """One cache layer's place in the pools: its group, its region and the two cache views."""

    group_id: int
    region: int
    key_cache: torch.Tensor  # [num_blocks, block_size, num_kv_heads, head_dim]
    value_cache: torch.Tensor


class PagedKVCache:
    """Allocates every pool of `layout` on `device` and hands out per-layer K/V views.

    `dtype` is the element type of the K/V (the model's compute dtype); its size must be the
    planner's `spec.dtype_bytes`, so the allocation is byte for byte what the Layout planned.
    """

    def __init__(self, layout: Layout, dtype: torch.dtype, device: torch.device | str) -> None:
        self.layout = layout
        self.dtype = dtype
        self.device = torch.device(device)
        elem = torch.empty((), dtype=dtype).element_size()
        slots = {p.pool_id: p for p in layout.pools}
        for g in layout.groups:
            _check_group(g, elem)
            pool = slots[g.pool_id]
            if g.page_size_bytes * pool.num_slots != pool.bytes_per_block:
                raise UnsupportedLayoutError(
                    f"{g.layer_names[0]}: page of {g.page_size_bytes} bytes x {pool.num_slots} slots is not "
                    f"pool {pool.pool_id}'s {pool.bytes_per_block} bytes per block")
        self.pools: dict[int, torch.Tensor] = {}
        for pool in layout.pools:
            raw = torch.zeros(pool.num_blocks * pool.bytes_per_block, dtype=torch.int8, device=self.device)
            self.pools[pool.pool_id] = raw.view(dtype)
        self.layers: dict[int, LayerCaches] = {}  # layer index -> its caches
        for group_id, g in enumerate(layout.groups):
            for region, layer_idx in enumerate(g.layer_ids):
                key, value = self._region_views(g, region, elem)
                self.layers[layer_idx] = LayerCaches(group_id, region, key, value)

    @property
    def num_bytes(self) -> int:
        """Bytes actually allocated, all pools together."""
        return sum(t.numel() * t.element_size() for t in self.pools.values())

    def _region_views(self, g: KVCacheGroup, region: int, elem: int) -> tuple[torch.Tensor, torch.Tensor]:
        pool = next(p for p in self.layout.pools if p.pool_id == g.pool_id)
        spec = g.spec
        assert isinstance(spec, AttentionCacheSpec)
        page_elems = g.page_size_bytes // elem
        heads, dim, size = spec.num_kv_heads, spec.head_dim, g.block_size
        token_elems = heads * dim
        # kv: [num_blocks, 2, block_size, num_kv_heads, head_dim] over region `region`
        kv = self.pools[g.pool_id].as_strided(
            (pool.num_blocks, 2, size, heads, dim),
            (page_elems, size * token_elems, token_elems, dim, 1),
            region * pool.num_blocks * page_elems,
        )
        return kv[:, 0], kv[:, 1]


def _check_group(g: KVCacheGroup, elem: int) -> None:
    spec = g.spec
    if not isinstance(spec, AttentionCacheSpec):
        raise UnsupportedLayoutError(f"group of {g.layer_names[0]}: recurrent state is not paged attention")
    if spec.is_mla or spec.head_dim != spec.head_dim_v:
        raise UnsupportedLayoutError(
            f"{g.layer_names[0]}: only K and V of equal head size are supported "
            f"(head_dim {spec.head_dim}, head_dim_v {spec.head_dim_v}{', MLA' if spec.is_mla else ''})")
    if spec.dtype_bytes != elem:
        raise UnsupportedLayoutError(
            f"{g.layer_names[0]}: the layout plans {spec.dtype_bytes}-byte K/V elements, the model "
            f"computes in {elem}-byte ones")
    if spec.page_size_bytes(g.block_size) > g.page_size_bytes or g.page_size_bytes % elem:
        raise UnsupportedLayoutError(f"{g.layer_names[0]}: page of {g.page_size_bytes} bytes cannot hold "
                                     f"{g.block_size} tokens of K/V")
