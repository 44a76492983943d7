"""KVCacheCoordinator: fans request operations out over every group and finds hybrid hits.

A hybrid hit of p tokens must be accepted by every group at once (full: [0, p) cached; sliding:
the last W - 1 tokens before p; chunked: p's chunk so far; recurrent: the checkpoint at p) and p
must be a multiple of every group's block size (their lcm). The longest such p is found by a
fixed point: start from the longest candidate, let each kind lower it to the longest hit it
accepts at or below it, repeat until every kind accepts it. Groups with the same kind, spec,
block size and pool form one lookup batch (a block position is cached only if cached in all of
them), so Gemma-3's six sliding groups cost one lookup.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import gcd, lcm

from hkv.model_specs.cache_spec import CacheKind
from hkv.planner.layout import Layout
from hkv.runtime.kv_cache.block_pool import NULL_BLOCK_ID, BlockPool
from hkv.runtime.kv_cache.cache_config import CacheConfig
from hkv.runtime.kv_cache.chunked_local_manager import ChunkedLocalManager
from hkv.runtime.kv_cache.circular_buffer_manager import CircularBufferManager
from hkv.runtime.kv_cache.eviction import Eviction, HitBlocks
from hkv.runtime.kv_cache.full_attention_manager import FullAttentionManager
from hkv.runtime.kv_cache.kind_manager import KindManager
from hkv.runtime.kv_cache.lanes import batch_key, lifecycle_batches
from hkv.runtime.kv_cache.recurrent_state_manager import RecurrentStateManager
from hkv.runtime.kv_cache.request_blocks import RequestBlocks
from hkv.runtime.kv_cache.sliding_window_manager import SlidingWindowManager

MANAGER_BY_KIND: dict[CacheKind, type[KindManager]] = {
    CacheKind.FULL: FullAttentionManager,
    CacheKind.SLIDING: SlidingWindowManager,
    CacheKind.CHUNKED: ChunkedLocalManager,
    CacheKind.RECURRENT: RecurrentStateManager,
    CacheKind.CIRCULAR: CircularBufferManager,
}


class _LookupBatch:
    """Groups that share one hit rule; a position is cached only if cached in all of them."""

    def __init__(self, managers: list[KindManager]) -> None:
        self.manager = managers[0]
        maps = [m.pool.cached_map(m.group_id) for m in managers]  # live maps, read only
        self.maps = list({id(cached): cached for cached in maps}.values())  # a lane's groups share one

    def longest_hit_len(self, block_hashes: list[bytes], max_len: int, alignment: int) -> int:
        return self.manager.longest_hit_len_in(self.maps, block_hashes, max_len, alignment)


class KVCacheCoordinator:
    """One manager per group of the Layout over the pools they draw from. `lanes`: the batches
    held as lanes (lanes.py; their pools are LanePools), none by default."""

    def __init__(self, layout: Layout, pools: dict[int, BlockPool], config: CacheConfig,
                 lanes: Sequence[Sequence[int]] = ()) -> None:
        if not layout.groups:
            raise ValueError(f"layout {layout.name!r} has no KV cache groups")
        sizes = [g.block_size for g in layout.groups]
        self.hash_block_size = gcd(*sizes)
        self.hit_alignment = lcm(*sizes)
        self.managers: list[KindManager] = [
            MANAGER_BY_KIND[g.kind](g, gid, pools[g.pool_id], self.hash_block_size, config)
            for gid, g in enumerate(layout.groups)
        ]
        self.num_groups = len(self.managers)
        self.pool_list = [pools[p.pool_id] for p in layout.pools if layout.groups_of(p.pool_id)]
        self._pool_index = {id(pool): i for i, pool in enumerate(self.pool_list)}
        self.pool_index_of_group = [self._pool_index[id(m.pool)] for m in self.managers]
        self.managers_of_pool = [[m for m in self.managers if m.pool is pool] for pool in self.pool_list]
        by_key: dict[tuple[object, ...], list[KindManager]] = {}
        for group, manager in zip(layout.groups, self.managers, strict=True):
            by_key.setdefault(batch_key(group), []).append(manager)
        batches = [_LookupBatch(ms) for ms in by_key.values()]
        # Lifecycle batches: runs of consecutive groups with the same rules and pool (see
        # KindManager); each is driven through its first manager, its lead. Recurrent groups
        # stay alone.
        self.leads: list[KindManager] = []
        for gids in lifecycle_batches(layout):
            lead = self.managers[gids[0]]
            lead.batch = [self.managers[gid] for gid in gids]
            lead.gids = list(gids)
            self.leads.append(lead)
        # Lanes: per group, the group whose table it shares (None without lanes); the managers
        # whose tables are distinct (every manager without lanes), per pool too.
        self.lane_of: list[int] | None = None
        if lanes:
            self.lane_of = list(range(self.num_groups))
            for lane in lanes:
                lead = self.managers[lane[0]]
                assert lead.gids == list(lane), f"lane {list(lane)} is not a lifecycle batch"
                lead.lane = True
                for gid in lane:
                    self.lane_of[gid] = lane[0]
        lane_of = self.lane_of
        self.holders = [m for m in self.managers if lane_of is None or lane_of[m.group_id] == m.group_id]
        self.holders_of_pool = [[m for m in self.holders if m.pool is pool] for pool in self.pool_list]
        self._lead_pool_index = [self._pool_index[id(m.pool)] for m in self.leads]
        self._skipping_leads = [m for m in self.leads if m.next_release_len(0) is not None]
        # The lookup batches whose kinds accept downward-closed hits (full attention), the others.
        self.closed_batches = [b for b in batches if b.manager.hits_downward_closed]
        self.open_batches = [b for b in batches if not b.manager.hits_downward_closed]

    def set_eviction(self, eviction: Eviction) -> None:
        """Let every manager release blocks through this policy (see Eviction.release_early)."""
        for m in self.managers:
            m.eviction = eviction

    # ---- prefix-cache lookup (reads only) ---------------------------------------------------

    def closed_hit_len(self, block_hashes: list[bytes], max_len: int) -> int:
        """Longest hit (aligned, <= max_len) of the downward-closed kinds alone (full attention)."""
        alignment = self.hit_alignment
        hit = max_len // alignment * alignment
        for batch in self.closed_batches:
            hit = batch.longest_hit_len(block_hashes, hit, alignment)
        return hit

    def find_longest_cache_hit(self, block_hashes: list[bytes], max_len: int,
                               closed_len: int | None = None) -> int:
        """Longest p <= max_len that every group accepts (0 if none), aligned to every block size.

        `block_hashes` must cover max_len tokens. `closed_len`, when given, replaces the lookup of
        the downward-closed kinds by a known bound on their hit.
        """
        alignment = self.hit_alignment
        if closed_len is None:
            hit = self.closed_hit_len(block_hashes, max_len)
        else:
            hit = min(max_len, closed_len) // alignment * alignment
        batches = self.open_batches
        num_batches = len(batches)
        num_accepting, i = 0, 0
        while num_accepting < num_batches and hit > 0:
            lowered = batches[i].longest_hit_len(block_hashes, hit, alignment)
            if lowered == hit:
                num_accepting += 1
            else:
                hit, num_accepting = lowered, 1
            i = (i + 1) % num_batches
        return hit

    def hit_blocks(self, block_hashes: list[bytes], hit_len: int) -> tuple[list[int], ...]:
        """Per group, the block table prefix of a hit of `hit_len` tokens (an accepted length)."""
        result: list[list[int]] = []
        lane_of = self.lane_of
        for m in self.managers:
            if lane_of is not None and lane_of[m.group_id] != m.group_id:
                result.append(result[lane_of[m.group_id]])  # the lane's one list
                continue
            first = m.hit_first_block(hit_len)
            cached, stride = m.pool.cached_map(m.group_id), m.hash_stride
            blocks = [NULL_BLOCK_ID] * first
            blocks.extend(map(cached.__getitem__,
                              block_hashes[(first + 1) * stride - 1:hit_len // m.block_size * stride:stride]))
            result.append(blocks)
        return tuple(result)

    def hit_point_hash(self, block_hashes: list[bytes], closed_len: int, hit_len: int) -> bytes | None:
        """The prefix hash where a request's hit ends: that of the last block of its
        full-attention hit (`closed_len`) in the first downward-closed group, or of its hybrid
        hit (`hit_len`) in group 0 when no group is downward-closed; None for an empty hit."""
        if self.closed_batches:
            m, hit_point = self.closed_batches[0].manager, closed_len
        else:
            m, hit_point = self.managers[0], hit_len
        num_blocks = hit_point // m.block_size
        return block_hashes[num_blocks * m.hash_stride - 1] if num_blocks else None

    def released_hit_blocks(self, rb: RequestBlocks, hit_len: int) -> list[tuple[BlockPool, int]]:
        """(pool, block id) of each cached block that a hit of `hit_len` tokens on the request's
        own prefix needs in a position where the request's table already holds the null block
        (released early: a window's first blocks, the last checkpoint). `rb.request.block_hashes`
        must cover hit_len tokens."""
        found = []
        block_hashes = rb.request.block_hashes
        for m in self.holders:
            table = rb.block_ids[m.group_id]
            first, last = m.hit_first_block(hit_len), min(hit_len // m.block_size, len(table))
            if first >= last or NULL_BLOCK_ID not in table[first:last]:
                continue
            cached, stride = m.pool.cached_map(m.group_id), m.hash_stride
            for pos in range(first, last):
                if table[pos] == NULL_BLOCK_ID:
                    block_id = cached.get(block_hashes[(pos + 1) * stride - 1])
                    if block_id is not None:
                        found.append((m.pool, block_id))
        return found

    # ---- request lifecycle -------------------------------------------------------------------

    def cache_blocks(self, rb: RequestBlocks, num_computed: int) -> None:
        for m in self.leads:
            m.cache_blocks(rb, num_computed)

    def cache_hit_point(self, rb: RequestBlocks, hit_len: int) -> None:
        for m in self.leads:
            m.cache_hit_point(rb, hit_len)

    def remove_skipped_blocks(self, rb: RequestBlocks, num_computed: int) -> None:
        for m in self._skipping_leads:
            m.remove_skipped_blocks(rb, num_computed)

    def num_blocks_to_allocate(self, rb: RequestBlocks, hit: HitBlocks | None, num_tokens: int,
                               num_main_tokens: int) -> list[int]:
        """Per pool (in `pool_list` order): free blocks the step consumes, counting hit blocks
        taken out of the free queue (cached-free ones) and blocks released before popping."""
        needs = [0] * len(self.pool_list)
        for m, pool_index in zip(self.leads, self._lead_pool_index, strict=True):
            hit_blocks = hit[m.group_id] if hit is not None else ()
            need = m.num_blocks_to_allocate(rb, hit_blocks, num_tokens, num_main_tokens) * len(m.gids)
            if hit_blocks and hit is not None:
                num_free = m.pool.num_free_among
                if m.lane:  # one list of entries: each free one takes a block of every group
                    need += num_free(hit_blocks) * len(m.gids)
                else:
                    for gid in m.gids:
                        need += num_free(hit[gid])
            needs[pool_index] += need
        return needs

    def max_blocks_to_pop(self, rb: RequestBlocks, num_tokens: int) -> list[int]:
        """Per pool (in `pool_list` order): at most how many blocks an allocation of the request
        (holding blocks, no hit) to `num_tokens` slots pops, releases not counted."""
        pops = [0] * len(self.pool_list)
        for m, pool_index in zip(self.leads, self._lead_pool_index, strict=True):
            pops[pool_index] += m.max_blocks_to_pop(rb, num_tokens) * len(m.gids)
        return pops

    def fits(self, needs: list[int]) -> bool:
        pools = self.pool_list
        if len(pools) == 1:
            return needs[0] <= pools[0].num_free_blocks
        return all(need <= pool.num_free_blocks for need, pool in zip(needs, pools, strict=True))

    def fits_unprotected(self, needs: list[int]) -> bool:
        pools = self.pool_list
        if len(pools) == 1:
            return needs[0] <= pools[0].num_unprotected_free_blocks
        return all(need <= pool.num_unprotected_free_blocks for need, pool in zip(needs, pools, strict=True))

    def adopt_hit(self, rb: RequestBlocks, hit: HitBlocks, hit_len: int) -> None:
        """Take a reference on every hit block of every group before anything is allocated, so
        one group's allocation cannot evict another group's hit."""
        if self.lane_of is not None:
            self._adopt_lane_hit(rb, hit, hit_len)
            return
        for m, blocks in zip(self.managers, hit, strict=True):
            gid = m.group_id
            assert not rb.block_ids[gid], "hits are adopted only by a request holding nothing"
            m.pool.touch(blocks, gid)
            rb.block_ids[gid] = list(blocks)
            rb.num_cached_blocks[gid] = len(blocks)
            rb.num_skipped_blocks[gid] = m.hit_first_block(hit_len)

    def _adopt_lane_hit(self, rb: RequestBlocks, hit: HitBlocks, hit_len: int) -> None:
        """adopt_hit with lanes: one reference per entry of a lane, taken into its one table."""
        lane_of = self.lane_of
        assert lane_of is not None
        for m, blocks in zip(self.managers, hit, strict=True):
            gid = m.group_id
            if lane_of[gid] == gid:
                assert not rb.block_ids[gid], "hits are adopted only by a request holding nothing"
                m.pool.touch(blocks, gid)
                rb.block_ids[gid].extend(blocks)  # in place: the lane's groups share the list
            rb.num_cached_blocks[gid] = len(blocks)
            rb.num_skipped_blocks[gid] = m.hit_first_block(hit_len)

    def allocate_new_blocks(self, rb: RequestBlocks, num_tokens: int,
                            num_main_tokens: int) -> tuple[list[int], ...]:
        new_blocks: list[list[int]] = []
        for m in self.leads:
            new_blocks += m.allocate_new_blocks(rb, num_tokens, num_main_tokens)
        return tuple(new_blocks)

    def set_steady_bounds(self, rb: RequestBlocks, num_computed: int, enable_caching: bool,
                          cached_len: int | None = None) -> None:
        """Record until when allocate_slots has nothing to do for this request (see
        RequestBlocks.is_steady).
        `cached_len`: the tokens cached at schedule time (CacheTiming.SCHEDULED), else None."""
        until_computed: int | None = None
        until_tokens: int | None = None
        if cached_len is not None:  # the next block is cached once a step reaches its end
            alignment = self.hit_alignment
            until_tokens = (cached_len // alignment + 1) * alignment - 1
        for m in self.leads:  # the groups of a batch have the same bounds
            size = m.block_size
            bound = m.next_release_len(num_computed)
            if enable_caching and cached_len is None:
                next_boundary = (num_computed // size + 1) * size
                bound = next_boundary if bound is None else min(bound, next_boundary)
            if bound is not None and (until_computed is None or bound < until_computed):
                until_computed = bound
            capacity = len(rb.block_ids[m.group_id]) * size
            if until_tokens is None or capacity < until_tokens:
                until_tokens = capacity
        rb.steady_until_computed = until_computed
        rb.steady_until_tokens = until_tokens or 0
        rb.request.steady_decode_until = rb.steady_decode_until()
