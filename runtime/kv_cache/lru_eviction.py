"""LruEviction: release a request's blocks in vLLM's order; eviction is the pool's plain LRU."""

from __future__ import annotations

from collections.abc import Iterable

from hkv.runtime.kv_cache.cache_config import FreeOrder
from hkv.runtime.kv_cache.kv_cache_coordinator import HitBlocks, KVCacheCoordinator
from hkv.runtime.request import Request


class LruEviction:
    """Frees requests so that, per group, tail blocks are evicted before their parents."""

    def __init__(self, coordinator: KVCacheCoordinator, enable_caching: bool,
                 free_order: FreeOrder = FreeOrder.REQUEST_TAIL_FIRST) -> None:
        self.coordinator = coordinator
        self.enable_caching = enable_caching
        self.free_order = free_order
        self._managers_of_pool = [[m for m in coordinator.managers if m.pool is pool]
                                  for pool in coordinator.pool_list]

    def note_admission(self, request: Request, hit_len: int) -> None:
        """A request with a prefix hit of `hit_len` tokens is admitted (its last lookup set
        `request.closed_hit_len`). Plain LRU keeps no record of hits."""

    def reserve_hits(self, hits: Iterable[HitBlocks]) -> None:
        """The hits of the requests waiting at the head of the queue, head first (each a lookup:
        consume only what is used; group-aware eviction orders their cached-free blocks). Plain
        LRU keeps no record of hits and consumes none."""

    def reserve_more(self, hits: Iterable[HitBlocks]) -> None:
        """`reserve_hits` for requests that joined the back of the reserved ones (see
        GroupAwareEviction); plain LRU keeps no record of hits."""

    def free_request(self, request: Request) -> None:
        """Release every block the request holds (see FreeOrder), each group tail first."""
        managers = self.coordinator.managers
        if self.free_order is FreeOrder.GROUP_BY_GROUP:
            for m in managers:
                held = request.block_ids[m.group_id][request.num_skipped_blocks[m.group_id]:]
                held.reverse()
                m.pool.release_blocks(held)
            return
        for pool_managers in self._managers_of_pool:
            if not pool_managers:
                continue
            held = []
            for m in pool_managers:
                held.extend(request.block_ids[m.group_id][request.num_skipped_blocks[m.group_id]:])
            held.reverse()
            pool_managers[0].pool.release_blocks(held)
