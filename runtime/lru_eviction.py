"""LruEviction: release a request's blocks in vLLM's order; eviction is the pool's plain LRU."""

from __future__ import annotations

from hkv.runtime.kv_cache_coordinator import KVCacheCoordinator
from hkv.runtime.request import Request


class LruEviction:
    """Frees requests so that, per group, tail blocks are evicted before their parents."""

    def __init__(self, coordinator: KVCacheCoordinator, enable_caching: bool) -> None:
        self.coordinator = coordinator
        self.enable_caching = enable_caching

    def free_request(self, request: Request) -> None:
        """Release every block the request holds: groups in reverse order, each tail first
        (cached blocks reach the LRU back in that order)."""
        for m in reversed(self.coordinator.managers):
            blocks = request.block_ids[m.group_id]
            held = blocks[request.num_skipped_blocks[m.group_id]:]
            held.reverse()
            m.pool.release_blocks(held)
