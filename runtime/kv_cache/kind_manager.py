"""KindManager: the per-group block policy of one cache kind (the base of the four managers).

A manager is stateless apart from counters: a request's blocks for its group live in
`rb.block_ids[group_id]` (rb: the request's RequestBlocks, owned by the KVCacheManager), indexed
by block position. What differs between kinds is which leading blocks a request no longer
needs once `num_computed` tokens are computed:

    num_skipped_blocks(num_computed) = k   ->   block_ids[g][:k] are (or become) the null block

The same function defines the prefix-cache hit rule: a hit of `p` tokens needs exactly the
blocks [num_skipped_blocks(p), p // block_size) to be cached in this group.

Request lifecycle calls act for a whole `batch`: consecutive groups with the same rules and pool
(Gemma-3's sliding groups), whose tables always have the same length, skipped and cached
prefixes. The coordinator calls them on each batch's first manager; a group alone is a batch of
one. They treat the groups in group order, as separate calls would. A batch held as a lane
(`lane`, see lanes.py) has one table shared by its groups and one pool entry per position: the
calls then act on that table and entry once, and only the per-group counters are kept per group.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import takewhile
from operator import and_
from typing import ClassVar

from hkv.model_specs.cache_spec import CacheKind
from hkv.planner.layout import KVCacheGroup, cdiv
from hkv.runtime.kv_cache.block_pool import NULL_BLOCK_ID, BlockPool
from hkv.runtime.kv_cache.cache_config import CacheConfig
from hkv.runtime.kv_cache.eviction import Eviction
from hkv.runtime.kv_cache.request_blocks import RequestBlocks

class KindManager:
    """Block policy of one KV cache group; subclasses set `kind` and `num_skipped_blocks`."""

    kind: ClassVar[CacheKind]
    # True when the accepted hit lengths are downward closed (a hit of p implies every shorter
    # aligned hit): the coordinator then evaluates the lookup once instead of per candidate.
    hits_downward_closed: ClassVar[bool] = False
    # True when every hit of p > 0 needs the block before p (num_skipped_blocks(p) < p / size);
    # set by the kinds where it holds, it lets longest_hit_len_in skip candidates.
    nonempty_windows: bool = False
    # Where released blocks go: set by the coordinator (KVCacheCoordinator.set_eviction).
    eviction: Eviction

    def __init__(self, group: KVCacheGroup, group_id: int, pool: BlockPool, hash_block_size: int,
                 config: CacheConfig) -> None:
        if group.block_size % hash_block_size:
            raise ValueError(f"group {group_id}: block_size {group.block_size} is not a multiple "
                             f"of hash_block_size {hash_block_size}")
        self.group = group
        self.group_id = group_id
        self.pool = pool
        self.block_size = group.block_size
        self.hash_stride = group.block_size // hash_block_size  # fine hashes per block
        self.num_early_released_blocks = 0  # released before the request ended
        self.config = config
        self.batch: list[KindManager] = [self]  # set by the coordinator on a batch's first manager
        self.gids = [group_id]
        self.lane = False  # set by the coordinator on the lead of a batch held as a lane

    # ---- kind rules -------------------------------------------------------------------------

    def num_skipped_blocks(self, num_computed: int) -> int:
        """Leading blocks a request with `num_computed` computed tokens no longer needs."""
        raise NotImplementedError

    def next_release_len(self, num_computed: int) -> int | None:
        """Smallest num_computed' > num_computed at which `num_skipped_blocks` may grow; None
        if it never does."""
        raise NotImplementedError

    # ---- prefix-cache lookup (reads only) ---------------------------------------------------

    def longest_hit_len_in(self, maps: Sequence[Mapping[bytes, int]], block_hashes: Sequence[bytes],
                           max_len: int, alignment: int) -> int:
        """Longest hit p <= max_len, p a multiple of `alignment` (itself a multiple of
        block_size), whose needed blocks are all cached, where block position p is cached iff
        its hash, block_hashes[(p + 1) * hash_stride - 1], is a key of every map (the
        coordinator's lookup; `block_hashes` must cover max_len tokens). 0 always qualifies.
        Found at C speed (tests/runtime/rt_layouts.py holds the plain scan it must agree with):
        the first candidate's window is probed from its end by takewhile runs; past a miss,
        cached flags of the positions below it are computed once and each next
        candidate is checked by one rfind. When no window is ever empty (`nonempty_windows`), a
        candidate whose last position misses is skipped: the next one ends just after the last
        cached position below the previous miss."""
        size = self.block_size
        step = alignment // size
        stride = self.hash_stride
        end = max_len // alignment * step
        if end <= 0:
            return 0
        first = self.num_skipped_blocks(end * size)
        last = end * stride - 1
        run = end - first  # trailing positions of the window cached in every map so far
        for cached in maps:
            if run:
                run = len(list(takewhile(cached.__contains__, map(
                    block_hashes.__getitem__, range(last, last - run * stride, -stride)))))
        if run == end - first:
            return end * size
        miss = end - 1 - run
        hashes = block_hashes[stride - 1:miss * stride:stride]  # positions 0 .. miss - 1
        flags = bytes(map(maps[0].__contains__, hashes))
        for cached in maps[1:]:
            flags = bytes(map(and_, flags, map(cached.__contains__, hashes)))
        nonempty_windows = self.nonempty_windows
        while True:
            if nonempty_windows:  # candidates ending after the last cached position hold a miss
                end = (flags.rfind(1, 0, miss) + 1) // step * step
            else:
                end = miss // step * step
            if end <= 0:
                return 0
            miss = flags.rfind(0, self.num_skipped_blocks(end * size), end)
            if miss < 0:
                return end * size

    def max_hit_blocks(self, max_len: int) -> int:
        """Most non-null blocks a hit of at most `max_len` tokens holds in this group."""
        return max_len // self.block_size

    def hit_first_block(self, hit_len: int) -> int:
        """Blocks before this position are the null block in a hit of `hit_len` tokens."""
        return self.num_skipped_blocks(hit_len) if hit_len else 0

    # ---- request lifecycle -------------------------------------------------------------------

    def num_blocks_to_allocate(self, rb: RequestBlocks, hit_blocks: Sequence[int], num_tokens: int,
                               num_main_tokens: int) -> int:
        """Blocks to pop, per group of the batch, so the request holds `num_tokens` slots
        (`num_main_tokens` without lookahead) after adopting `hit_blocks` (the first group's),
        net of blocks it returns to the free queue first."""
        num_held = len(rb.block_ids[self.group_id]) + len(hit_blocks)
        return max(0, cdiv(num_tokens, self.block_size) - num_held)

    def max_blocks_to_pop(self, rb: RequestBlocks, num_tokens: int) -> int:
        """At most how many blocks, per group of the batch, an allocation to `num_tokens` slots
        pops from the pool, counting nothing it returns first (a bound that holds whatever other
        requests release or take in between)."""
        return max(0, cdiv(num_tokens, self.block_size) - len(rb.block_ids[self.group_id]))

    def allocate_new_blocks(self, rb: RequestBlocks, num_tokens: int,
                            num_main_tokens: int) -> list[list[int]]:
        """Append blocks so every table of the batch covers `num_tokens` tokens; returns the new
        block ids per group. The caller has checked `num_blocks_to_allocate` against the pool."""
        tables = rb.block_ids
        num_new = cdiv(num_tokens, self.block_size) - len(tables[self.group_id])
        if num_new <= 0:
            return [[] for _ in self.gids]
        if self.lane:  # one table, one entry per position for the whole batch
            entries = self.pool.allocate(num_new, self.group_id)
            tables[self.group_id].extend(entries)
            return [entries] * len(self.gids)
        new_blocks = self.pool.allocate_groups(num_new, self.gids)
        for gid, blocks in zip(self.gids, new_blocks, strict=True):
            tables[gid].extend(blocks)
        return new_blocks

    def remove_skipped_blocks(self, rb: RequestBlocks, num_computed: int) -> None:
        """Release (through the eviction policy) the blocks that fell out of what `num_computed`
        computed tokens still need and put the null block in their place (cache them first:
        see `cache_blocks`)."""
        gid0 = self.group_id
        start = rb.num_skipped_blocks[gid0]
        stop = min(self.num_skipped_blocks(num_computed), len(rb.block_ids[gid0]))
        if stop <= start:
            return
        nulls = [NULL_BLOCK_ID] * (stop - start)
        release_early, pool = self.eviction.release_early, self.pool
        if self.lane:  # the batch's one table and entries, released once
            blocks = rb.block_ids[gid0]
            released = blocks[start:stop]
            released.reverse()
            release_early(rb, pool, gid0, released)
            num_released = len(released) - released.count(NULL_BLOCK_ID)
            blocks[start:stop] = nulls
            for m in self.batch:
                m.num_early_released_blocks += num_released
                rb.num_skipped_blocks[m.group_id] = stop
            return
        for m in self.batch:
            gid = m.group_id
            blocks = rb.block_ids[gid]
            released = blocks[start:stop]
            # Tail first: a released cached block goes to the LRU back, so later positions of
            # the prefix are evicted before the earlier positions they depend on.
            released.reverse()
            release_early(rb, pool, gid, released)
            m.num_early_released_blocks += len(released) - released.count(NULL_BLOCK_ID)
            blocks[start:stop] = nulls
            rb.num_skipped_blocks[gid] = stop

    def cache_blocks(self, rb: RequestBlocks, num_computed: int) -> None:
        """Register the request's blocks whose tokens are all computed under their prefix hash.
        `rb.request.block_hashes` must cover `num_computed` tokens."""
        gid0 = self.group_id
        start = rb.num_cached_blocks[gid0]
        stop = min(num_computed // self.block_size, len(rb.block_ids[gid0]))
        if stop > start:
            self._cache_range(rb, start, stop)
            for gid in self.gids:
                rb.num_cached_blocks[gid] = stop

    def _cache_range(self, rb: RequestBlocks, start: int, stop: int) -> None:
        """Cache block positions [start, stop) of every group of the batch (start < stop)."""
        stride = self.hash_stride
        hashes = rb.request.block_hashes[(start + 1) * stride - 1:stop * stride:stride]
        cache_blocks, tables = self.pool.cache_blocks, rb.block_ids
        if self.lane:
            cache_blocks(tables[self.group_id][start:stop], hashes, self.group_id)
            return
        for gid in self.gids:
            cache_blocks(tables[gid][start:stop], hashes, gid)

    def check_request(self, rb: RequestBlocks) -> None:
        """Table invariants of this kind for one request, beyond RequestBlocks.check_integrity's
        (the circular buffer's one ring block); none by default. Raises AssertionError."""

    def cache_hit_point(self, rb: RequestBlocks, hit_len: int) -> None:
        """Make sure the blocks a later hit of `hit_len` tokens needs are cached (kinds that do
        not cache densely override this; the others have cached them already)."""
