"""LruEviction: release a request's blocks in vLLM's order; eviction is the pool's plain LRU."""

from __future__ import annotations

from collections.abc import Sequence

from hkv.runtime.kv_cache.block_pool import BlockPool
from hkv.runtime.kv_cache.cache_config import CacheConfig
from hkv.runtime.kv_cache.eviction import Eviction, HitOf
from hkv.runtime.kv_cache.kv_cache_coordinator import KVCacheCoordinator
from hkv.runtime.kv_cache.request_blocks import RequestBlocks
from hkv.runtime.kv_cache.vllm_compat import FreeOrder
from hkv.runtime.request import Request


class LruEviction(Eviction):
    """Frees requests so that, per group, tail blocks are evicted before their parents; every
    cached block a request gives back goes to the back of the main segment."""

    def __init__(self, coordinator: KVCacheCoordinator, config: CacheConfig) -> None:
        self.coordinator = coordinator
        self.free_order = config.free_order
        self._managers_of_pool = coordinator.holders_of_pool  # a lane's table once

    def note_admission(self, rb: RequestBlocks, hit_len: int) -> None:
        """Plain LRU keeps no record of hits."""

    def release_early(self, rb: RequestBlocks, pool: BlockPool, group_id: int, block_ids: list[int]) -> None:
        pool.release_blocks(block_ids, group_id)

    def note_waiting(self, first: Sequence[Request], hit_of: HitOf) -> None:
        """Plain LRU keeps no record of hits and looks none up."""

    def free_request(self, rb: RequestBlocks) -> None:
        """Release every block the request holds (see FreeOrder), each group tail first."""
        managers = self.coordinator.holders
        if self.free_order is FreeOrder.GROUP_BY_GROUP:
            for m in managers:
                held = rb.block_ids[m.group_id][rb.num_skipped_blocks[m.group_id]:]
                held.reverse()
                m.pool.release_blocks(held, m.group_id)
            return
        for pool_managers in self._managers_of_pool:
            if not pool_managers:
                continue
            held = []
            for m in pool_managers:
                held.extend(rb.block_ids[m.group_id][rb.num_skipped_blocks[m.group_id]:])
            held.reverse()
            pool_managers[0].pool.release_blocks(held)
