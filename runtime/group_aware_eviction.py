"""GroupAwareEviction: evict released prefixes coherently across groups (after Jenga).

A hybrid hit needs blocks of every group at once, so under one group-blind LRU the loss of a
single block (a sliding-window tail, a Mamba checkpoint) can leave many blocks of the other
groups cached but worthless (vLLM #45238, #48435). Two rules keep hit lengths balanced:

1. Release order. A finished request's blocks reach the LRU back in descending token position
   across all groups (ties: later groups first), so its prefix shrinks from the tail in every
   group together, instead of group after group.
2. Cascade. A released request leaves a `_ReleasedPrefix` (its hash chain), which owns the
   request's cached-free blocks, those released at its end and those it released earlier (out of
   window, old checkpoints) that are still cached. When one of its blocks is evicted and that block lay inside the longest hit the chain still offered, the
   coordinator recomputes the chain's longest hit H from the live map; every cached-free block
   of the chain at a position >= H can no longer serve any hit, so it is moved to the queue
   front and goes before blocks that still serve hits. Each position is demoted at most once per
   prefix, and a prefix is recomputed only when an eviction cuts into its live part.

Layouts with only full attention gain nothing from the cascade (tail-first release already
evicts children before parents), so it is not installed there.
"""

from __future__ import annotations

from hkv.planner.layout import cdiv
from hkv.runtime.block_pool import NULL_BLOCK_ID, BlockPool
from hkv.runtime.kv_cache_coordinator import KVCacheCoordinator
from hkv.runtime.lru_eviction import LruEviction
from hkv.runtime.request import Request


class _ReleasedPrefix:
    """The hash chain of a released request and the longest hit it may still give."""

    __slots__ = ("block_hashes", "num_tokens", "hit_len")

    def __init__(self, block_hashes: list[bytes], num_tokens: int) -> None:
        self.block_hashes = block_hashes  # the request's list; positions < num_tokens never change
        self.num_tokens = num_tokens
        self.hit_len = num_tokens  # upper bound until the first recompute


class GroupAwareEviction(LruEviction):
    def __init__(self, coordinator: KVCacheCoordinator, enable_caching: bool) -> None:
        super().__init__(coordinator, enable_caching)
        self._cascade = enable_caching and any(
            not m.hits_downward_closed for m in coordinator.managers)
        pools = coordinator.pool_list
        # Per pool, per block: the released prefix it was last freed with, and its start token.
        self._owner: list[list[_ReleasedPrefix | None]] = [[None] * p.num_blocks for p in pools]
        self._start: list[list[int]] = [[0] * p.num_blocks for p in pools]
        if self._cascade:
            for pool in pools:
                pool.set_evict_listener(self._on_evict)

    def free_request(self, request: Request) -> None:
        """Release every held block in descending token position across groups and, with the
        cascade on, remember the request's chain for the blocks that became cached-free."""
        coordinator = self.coordinator
        held = [((pos + 1) * m.block_size, m.group_id, pos, block_id)
                for m, pos, block_id in coordinator.held_blocks(request)]
        held.sort(reverse=True)
        if not self._cascade:
            for _, gid, _, block_id in held:
                coordinator.managers[gid].pool.release(block_id)
            return
        prefix = _ReleasedPrefix(request.block_hashes, request.num_computed_tokens)
        self._claim_released_early(request, prefix)
        for _, gid, pos, block_id in held:
            m = coordinator.managers[gid]
            pool = m.pool
            pool.release(block_id)
            if pool.is_cached_free(block_id):
                pool_index = coordinator.pool_index_of_group[gid]
                self._owner[pool_index][block_id] = prefix
                self._start[pool_index][block_id] = pos * m.block_size

    def _claim_released_early(self, request: Request, prefix: _ReleasedPrefix) -> None:
        """Blocks the request released before its end (out of window, old checkpoints) that are
        still cached-free join its released prefix: their eviction may kill its hits too."""
        hashes = request.block_hashes
        for m in self.coordinator.managers:
            if m.hits_downward_closed:
                continue
            gid, size, stride = m.group_id, m.block_size, m.hash_stride
            pool_index = self.coordinator.pool_index_of_group[gid]
            owners, starts = self._owner[pool_index], self._start[pool_index]
            cached, ref_cnt = m.pool.cached_map(gid), m.pool.ref_cnt
            blocks = request.block_ids[gid]
            for pos in range(min(len(blocks), prefix.num_tokens // size)):
                if blocks[pos] != NULL_BLOCK_ID:
                    continue
                block_id = cached.get(hashes[(pos + 1) * stride - 1])
                if block_id is not None and ref_cnt[block_id] == 0:
                    owners[block_id] = prefix
                    starts[block_id] = pos * size

    def _on_evict(self, pool: BlockPool, block_id: int, group_id: int) -> None:
        pool_index = self.coordinator.pool_index_of_group[group_id]
        owners = self._owner[pool_index]
        prefix = owners[block_id]
        if prefix is None:
            return
        owners[block_id] = None
        if self._start[pool_index][block_id] >= prefix.hit_len:
            return  # already outside every hit the chain can give
        old_hit = prefix.hit_len
        new_hit = self.coordinator.find_longest_cache_hit(prefix.block_hashes, min(old_hit, prefix.num_tokens))
        prefix.hit_len = new_hit
        if new_hit < old_hit:
            self._demote_range(prefix, new_hit, old_hit)

    def _demote_range(self, prefix: _ReleasedPrefix, start_len: int, stop_len: int) -> None:
        """Move the chain's cached-free blocks starting in [start_len, stop_len) to the front."""
        hashes = prefix.block_hashes
        for m in self.coordinator.managers:
            size, stride = m.block_size, m.hash_stride
            cached, pool = m.pool.cached_map(m.group_id), m.pool
            for pos in range(cdiv(start_len, size), min(cdiv(stop_len, size), prefix.num_tokens // size)):
                block_id = cached.get(hashes[(pos + 1) * stride - 1])
                if block_id is not None and block_id != NULL_BLOCK_ID and pool.ref_cnt[block_id] == 0:
                    pool.demote(block_id)
                    self.num_demoted_blocks += 1
