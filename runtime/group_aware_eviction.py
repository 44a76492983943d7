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
   prefix, and a prefix is recomputed only when an eviction cuts into its live part, once per
   allocation. The full-attention part of the recompute uses a bound kept per prefix (all its
   full blocks were cached when it was released; the bound drops when one of them is evicted)
   instead of a scan from position 0; it ignores re-caching by later requests, so it can only
   make the cascade demote less, or, rarely, demote blocks a re-computed chain made useful again.

Layouts with only full attention gain nothing from the cascade (tail-first release already
evicts children before parents), so it is not installed there.
"""

from __future__ import annotations

from itertools import chain

from hkv.planner.layout import cdiv
from hkv.runtime.block_pool import NULL_BLOCK_ID, BlockPool
from hkv.runtime.kind_manager import KindManager
from hkv.runtime.kv_cache_coordinator import KVCacheCoordinator
from hkv.runtime.lru_eviction import LruEviction
from hkv.runtime.request import Request


class _ReleasedPrefix:
    """The hash chain of a released request and the longest hit it may still give."""

    __slots__ = ("block_hashes", "num_tokens", "hit_len", "closed_len")

    def __init__(self, block_hashes: list[bytes], num_tokens: int) -> None:
        self.block_hashes = block_hashes  # the request's list; positions < num_tokens never change
        self.num_tokens = num_tokens
        self.hit_len = num_tokens  # upper bound until the first recompute
        # Bound on the full-attention hit of the chain: all its full blocks were cached at
        # release; it drops to the start of each of its own full blocks that gets evicted.
        self.closed_len = num_tokens


class GroupAwareEviction(LruEviction):
    def __init__(self, coordinator: KVCacheCoordinator, enable_caching: bool) -> None:
        super().__init__(coordinator, enable_caching)
        self._cascade = enable_caching and any(
            not m.hits_downward_closed for m in coordinator.managers)
        pools = coordinator.pool_list
        self._pool_index = {pool.pool_id: i for i, pool in enumerate(pools)}
        # Per pool: the managers drawing from it, and whether they share one block size (then a
        # release order by position is a plain interleave, no sort).
        self._managers_of_pool = [[m for m in coordinator.managers if m.pool is pool] for pool in pools]
        # Per pool, per block: the released prefix it was last freed with, and its start token.
        self._owner: list[list[_ReleasedPrefix | None]] = [[None] * p.num_blocks for p in pools]
        self._start: list[list[int]] = [[0] * p.num_blocks for p in pools]
        if self._cascade:
            for pool in pools:
                pool.set_evict_listener(self._on_evict)

    def free_request(self, request: Request) -> None:
        """Release every held block in descending token position across groups and, with the
        cascade on, remember the request's chain for the blocks that became cached-free."""
        prefix = None
        if self._cascade:
            prefix = _ReleasedPrefix(request.block_hashes, request.num_computed_tokens)
            self._claim_released_early(request, prefix)
        for pool_index, managers in enumerate(self._managers_of_pool):
            if managers:
                managers[0].pool.release_blocks(self._release_order(request, managers))
                if prefix is not None:
                    self._own(request, managers, pool_index, prefix)

    @staticmethod
    def _release_order(request: Request, managers: list[KindManager]) -> list[int]:
        """The request's blocks of these groups by descending end position (ties: later group
        first); null entries included (release skips them)."""
        tables = [request.block_ids[m.group_id] for m in reversed(managers)]
        if len({m.block_size for m in managers}) == 1:
            length = max(len(t) for t in tables)
            columns = [[NULL_BLOCK_ID] * (length - len(t)) + t[::-1] for t in tables]
            return list(chain.from_iterable(zip(*columns)))
        keyed = [((pos + 1) * m.block_size, -i, block_id)
                 for i, m in enumerate(managers)
                 for pos, block_id in enumerate(request.block_ids[m.group_id]) if block_id != NULL_BLOCK_ID]
        keyed.sort(reverse=True)
        return [block_id for _, _, block_id in keyed]

    def _own(self, request: Request, managers: list[KindManager], pool_index: int,
             prefix: _ReleasedPrefix) -> None:
        owners, starts = self._owner[pool_index], self._start[pool_index]
        pool = managers[0].pool
        ref_cnt, block_hash = pool.ref_cnt, pool.block_hash
        for m in managers:
            size = m.block_size
            blocks = request.block_ids[m.group_id]
            for pos in range(request.num_skipped_blocks[m.group_id], len(blocks)):
                block_id = blocks[pos]
                if block_id != NULL_BLOCK_ID and ref_cnt[block_id] == 0 and block_hash[block_id] is not None:
                    owners[block_id] = prefix
                    starts[block_id] = pos * size

    def _claim_released_early(self, request: Request, prefix: _ReleasedPrefix) -> None:
        """Blocks the request released before its end that are still cached-free join its
        released prefix: their eviction may kill its hits too. Only the last
        `release_lookback_blocks` positions before each group's skipped frontier (and null
        entries after it) are looked up: the ones hits near the request's end need."""
        hashes = request.block_hashes
        for m in self.coordinator.managers:
            if m.hits_downward_closed:
                continue
            gid, size, stride = m.group_id, m.block_size, m.hash_stride
            pool_index = self._pool_index[m.pool.pool_id]
            owners, starts = self._owner[pool_index], self._start[pool_index]
            get, ref_cnt = m.pool.cached_map(gid).get, m.pool.ref_cnt
            blocks = request.block_ids[gid]
            frontier = request.num_skipped_blocks[gid]
            stop = min(len(blocks), prefix.num_tokens // size)
            for pos in range(max(0, frontier - m.release_lookback_blocks), stop):
                if blocks[pos] != NULL_BLOCK_ID:
                    continue
                block_id = get(hashes[(pos + 1) * stride - 1])
                if block_id is not None and ref_cnt[block_id] == 0:
                    owners[block_id] = prefix
                    starts[block_id] = pos * size

    def _on_evict(self, pool: BlockPool, evicted: list[tuple[int, int]]) -> None:
        pool_index = self._pool_index[pool.pool_id]
        owners, starts = self._owner[pool_index], self._start[pool_index]
        managers = self.coordinator.managers
        hurt: dict[int, _ReleasedPrefix] = {}  # prefixes that lost a block inside their hit
        for block_id, group_id in evicted:
            prefix = owners[block_id]
            if prefix is None:
                continue
            owners[block_id] = None
            start = starts[block_id]
            if managers[group_id].hits_downward_closed and start < prefix.closed_len:
                prefix.closed_len = start
            if start < prefix.hit_len:
                hurt[id(prefix)] = prefix
        for prefix in hurt.values():  # one recompute per prefix for the whole allocation
            old_hit = prefix.hit_len
            new_hit = self.coordinator.find_longest_cache_hit(
                prefix.block_hashes, min(old_hit, prefix.num_tokens), prefix.closed_len)
            prefix.hit_len = new_hit
            if new_hit < old_hit:
                self._demote_range(prefix, new_hit, old_hit)

    def _demote_range(self, prefix: _ReleasedPrefix, start_len: int, stop_len: int) -> None:
        """Move the chain's cached-free blocks starting in [start_len, stop_len) to the front."""
        hashes = prefix.block_hashes
        for m in self.coordinator.managers:
            size, stride = m.block_size, m.hash_stride
            get, ref_cnt = m.pool.cached_map(m.group_id).get, m.pool.ref_cnt
            stop = min(cdiv(stop_len, size), prefix.num_tokens // size)
            found = [get(h) for h in hashes[(cdiv(start_len, size) + 1) * stride - 1:stop * stride:stride]]
            dead = [b for b in found if b is not None and ref_cnt[b] == 0]
            if dead:
                m.pool.demote_blocks(dead)
                self.num_demoted_blocks += len(dead)
