"""What one request of a given length holds of each pool: its groups' layer pages, the padding
slots of the same blocks, and what is left for other requests.

A block of pool p is num_slots pages, one per layer slot (planner/layout.py). A request's block in
group g fills g.num_layers of those slots; the other num_slots - g.num_layers are padding that
nobody else can use while the request holds the block. So per group:

    held_bytes    = blocks_per_request x bytes_per_block
    layer_bytes   = held_bytes x num_layers / num_slots
    padding_bytes = held_bytes - layer_bytes

Splitting by slots (not by page_size_bytes) keeps the shares right when pipeline stages size the
pools for their own layers (pp > 1: bytes_per_block is one stage's, the groups list every layer).
"""

from __future__ import annotations

from dataclasses import dataclass

from hkv.model_specs.cache_spec import CacheKind
from hkv.planner.layout import Layout, Pool


@dataclass(frozen=True)
class PoolFootprint:
    """One pool as seen by one request at its worst case (`blocks_per_request` in every group).

    `layer_bytes_by_kind` lists each cache kind of the pool's groups once, in group order.
    `free_bytes` is negative when the request needs more than the pool has.
    """

    pool_id: int
    pool_bytes: int
    layer_bytes_by_kind: tuple[tuple[CacheKind, int], ...]
    padding_bytes: int

    @property
    def held_bytes(self) -> int:
        return sum(n for _kind, n in self.layer_bytes_by_kind) + self.padding_bytes

    @property
    def free_bytes(self) -> int:
        return self.pool_bytes - self.held_bytes


def pool_footprints(layout: Layout, seq_len: int) -> tuple[PoolFootprint, ...]:
    """Per pool of `layout`, in pool order: what one request of `seq_len` tokens holds."""
    return tuple(_footprint(layout, pool, seq_len) for pool in layout.pools)


def _footprint(layout: Layout, pool: Pool, seq_len: int) -> PoolFootprint:
    by_kind: dict[CacheKind, int] = {}
    padding_bytes = 0
    for g in layout.groups_of(pool.pool_id):
        held_bytes = g.blocks_per_request(seq_len, layout.in_flight_tokens) * pool.bytes_per_block
        # min(): a pipeline stage's pool may have fewer slots than the group has layers in all stages
        layer_bytes = held_bytes * min(g.num_layers, pool.num_slots) // pool.num_slots
        by_kind[g.kind] = by_kind.get(g.kind, 0) + layer_bytes
        padding_bytes += held_bytes - layer_bytes
    return PoolFootprint(pool.pool_id, pool.num_bytes, tuple(by_kind.items()), padding_bytes)
