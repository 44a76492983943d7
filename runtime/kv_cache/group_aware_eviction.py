"""GroupAwareEviction: keep what completes a hybrid hit, shrink released prefixes evenly.

A hybrid hit needs blocks of every group at once. Under one group-blind LRU, a request that
keeps running releases its out-of-window sliding blocks (or its old Mamba checkpoint) to the LRU
while it still holds the full-attention blocks of the same prefix; admissions evict those first
and the prefix's hit dies although most of it is still resident (vLLM #45238, #48435). So:

1. Branch points are protected. A request whose prefix hit ends where another request's hit
   ended (the prefix hash of the last full-attention block of the hit, see HitPointCounter)
   stands on a prefix that requests share and diverge after, such as a system prompt: later
   requests will hit there again, and need the window before it. The cached blocks it releases early go to the
   pool's protected segment: admissions may not count them as free (unless they are part of the
   admitted request's hit) and allocations take them only after every unprotected block.
2. Everything else released early is cold. A request whose hit point no other request shared
   (a conversation's previous turn: its next turn will hit further, past this request's end)
   releases windows that only a retry of an old prompt could use; they go to the cold segment,
   evicted before every other cached block. Plain LRU keeps them as fresh as what was just
   used, and in multi-session traffic they push out the conversations' histories.
3. Release order. When the request stops (finished or preempted), the cold blocks that a hit
   at its final length needs (a window's first block, its last checkpoint: released early, yet
   what its next turn hits) move to the LRU back; then its held blocks follow in descending
   token position across all groups (ties: later groups first), so the
   prefix shrinks from its tail in every group at once instead of group after group; then its
   protected blocks become ordinary and move behind them, so the few blocks that complete its
   hit points go last.
4. Waiting requests keep their hits. Under FCFS admission the requests at the head of the
   waiting queue are the next to hit, in queue order: the cached-free blocks of the hits of the
   first `CacheConfig.reserved_waiting_requests` (8) of them are reserved, evicted after every
   other unprotected cached block, those of requests further back first and the head's last
   (Belady's order for this queue). In round-robin multi-session traffic this is what keeps a
   conversation's history while the turns queued ahead of its next turn are admitted: plain
   LRU evicts the oldest history first, which is exactly the next one needed. The scheduler
   reports its queue before and after each admission round; a request is looked up once, when
   it joins the first eight (a preempted request put first resets the reservation).

Measured with benchmarks/bench_simulate.py (Gemma-3-27B, windows of 1,024; hit rate LRU ->
group-aware, `vllm` / `hkv` layout): 16 round-robin sessions in 12 GiB, 25.6 % -> 48.8 % (1.91x)
and 41.9 % -> 57.6 % (1.37x); 24 sessions in 20 GiB, 52.1 % -> 70.9 % (1.36x) and
65.7 % -> 75.1 % (1.14x); 10,000 requests over 16 shared system prompts, 1.4 % -> 35.8 % and
1.1 % -> 41.4 %. Without rule 4 the sessions reached 28.7 % and 46.9 % (12 GiB), 66.8 % and
75.1 % (20 GiB); rule 4 costs about 7 % simulation time (one more lookup per request).
Protecting every early release (the rule before branch points) reached 47.9 % on the shared
prompts but lost to LRU on sessions (12.4 % vs 25.6 %): it kept each conversation's dead
junction window protected while the histories the next turns needed were evicted. Tried and
dropped: counting hits per block instead of per prefix hash (the count dies with the block,
and a prefix that is evicted and recomputed never looks shared: 6 % on the shared prompts); a
cascade that demoted the other groups' blocks of a prefix once one group's block was evicted
(12 % on the shared prompts, 30 % slower); reserving only when the head is blocked (35.6 % on
12 GiB sessions, `vllm` layout: admissions that succeed still evicted the histories behind
them); looking all eight up again whenever they changed (the first prototype: 30 % slower).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import chain

from hkv.runtime.kv_cache.block_pool import NULL_BLOCK_ID, BlockPool
from hkv.runtime.kv_cache.cache_config import CacheConfig
from hkv.runtime.kv_cache.eviction import Eviction, HitBlocks, HitOf
from hkv.runtime.kv_cache.free_block_queue import FreeSegment
from hkv.runtime.kv_cache.hit_point_counter import HitPointCounter
from hkv.runtime.kv_cache.kind_manager import KindManager
from hkv.runtime.kv_cache.kv_cache_coordinator import KVCacheCoordinator
from hkv.runtime.kv_cache.request_blocks import RequestBlocks
from hkv.runtime.request import Request


# Waiting requests after the head are reserved only while their hits' cached-free blocks stay
# within this share of each pool's usable blocks (the head's always are).
RESERVED_SHARE = 0.5


class GroupAwareEviction(Eviction):
    def __init__(self, coordinator: KVCacheCoordinator, config: CacheConfig) -> None:
        self.coordinator = coordinator
        self.enable_caching = config.enable_caching
        self._managers_of_pool = coordinator.holders_of_pool  # a lane's table once
        # A live hit point holds at least one cached block: no more of them than blocks.
        num_blocks = sum(pool.num_usable_blocks for pool in coordinator.pool_list)
        self._hit_points = HitPointCounter(max(1, num_blocks))
        # Per pool id, per block: the owner list (RequestBlocks.protected_block_ids[g]) of the
        # request that last protected it (see release_early, _unprotect).
        self._protected_by: dict[int, list[list[int] | None]] = {
            pool.pool_id: [None] * pool.num_blocks for pool in coordinator.pool_list}
        self._reserved_for: tuple[str, ...] = ()  # ids of the waiting requests reserved, head first

    def note_admission(self, rb: RequestBlocks, hit_len: int) -> None:
        """Count the request's hit point and decide whether what it releases early is protected
        (its hit ends where another request's did) or cold."""
        prefix_hash = self.coordinator.hit_point_hash(rb.request.block_hashes, rb.closed_hit_len, hit_len)
        rb.protects_early_releases = prefix_hash is not None and self._hit_points.count(prefix_hash) >= 2

    def release_early(self, rb: RequestBlocks, pool: BlockPool, group_id: int, block_ids: list[int]) -> None:
        """With caching off, as LRU. Otherwise the cached blocks that become free go to the
        protected segment if the request protects its early releases (they are appended to its
        owner list `rb.protected_block_ids[group_id]`), else to the cold segment."""
        if not self.enable_caching:
            pool.release_blocks(block_ids, group_id)
        elif not rb.protects_early_releases:
            pool.release_to(block_ids, FreeSegment.COLD, group_id)
        else:
            protected = pool.release_to(block_ids, FreeSegment.PROTECTED, group_id)
            if protected:
                owner = rb.protected_block_ids[group_id]
                setitem = self._protected_by[pool.pool_id].__setitem__
                for block_id in protected:
                    setitem(block_id, owner)
                owner.extend(protected)

    def note_waiting(self, first: Sequence[Request], hit_of: HitOf) -> None:
        """Reserve the hits of the requests at the head of the waiting queue (`first`, head
        first; see rule 4). Incremental: when the requests reserved before, less the ones
        admitted from the head, still lead the queue, only the requests behind them are looked
        up and reserved ahead of the others (`_reserve_more`); otherwise (a preempted request
        went first) every hit is looked up again (`_reserve_hits`). The blocks of a reservation
        that are hit, evicted or released meanwhile simply leave it."""
        reserved_for = tuple(r.request_id for r in first)
        old = self._reserved_for
        if reserved_for == old:
            return
        self._reserved_for = reserved_for
        if old and reserved_for:
            queued = set(reserved_for)
            num_gone = 0  # admitted since: they led the queue
            while num_gone < len(old) and old[num_gone] not in queued:
                num_gone += 1
            kept = old[num_gone:]
            if reserved_for[:len(kept)] == kept:
                self._reserve_more(_hits(first[len(kept):], hit_of))
                return
        self._reserve_hits(_hits(first, hit_of))

    def _reserve_hits(self, hits: Iterable[HitBlocks]) -> None:
        """Reserve the cached-free blocks of the hits of the requests waiting at the head of the
        queue (`hits`: head first): they are evicted after the main segment, the hits of
        requests further back first, the head's last; within a hit, by descending position
        across groups. A block several hits share belongs to the first of them. Requests after
        the head are taken while every pool's reserved blocks stay within RESERVED_SHARE of it.
        Blocks reserved before and not now go to the back of the main segment."""
        pools = self.coordinator.pool_list
        limits = [pool.num_usable_blocks * RESERVED_SHARE for pool in pools]
        totals = [0] * len(pools)
        taken: list[set[int]] = [set() for _ in pools]  # per pool: blocks of earlier hits
        reserved: list[list[list[int]]] = []  # per request, per pool: its blocks, first evicted first
        for hit in hits:
            per_pool = [[b for b in blocks if b not in seen]
                        for blocks, seen in zip(self._free_hit_blocks(hit), taken, strict=True)]
            totals = [t + pool.num_blocks_of(p) for t, p, pool in zip(totals, per_pool, pools, strict=True)]
            if reserved and any(t > limit for t, limit in zip(totals, limits, strict=True)):
                break
            reserved.append(per_pool)
            for seen, blocks in zip(taken, per_pool, strict=True):
                seen.update(blocks)
        reserved.reverse()
        for i, pool in enumerate(pools):
            pool.reserve(list(chain.from_iterable(per_pool[i] for per_pool in reserved)))

    def _reserve_more(self, hits: Iterable[HitBlocks]) -> None:
        """Reserve the hits of requests that joined the back of the reserved ones (`hits`: in
        queue order), each ahead of everything reserved before (evicted first), which keeps
        _reserve_hits' order. Blocks reserved already stay with their earlier request; a request
        whose blocks would take a pool past RESERVED_SHARE is left out."""
        pools = self.coordinator.pool_list
        for hit in hits:
            per_pool = self._free_hit_blocks(hit)
            if any(pool.num_reserved_blocks + pool.num_blocks_of(blocks) > pool.num_usable_blocks * RESERVED_SHARE
                   for pool, blocks in zip(pools, per_pool, strict=True)):
                continue
            for pool, blocks in zip(pools, per_pool, strict=True):
                pool.reserve_front(blocks)

    def _free_hit_blocks(self, hit: HitBlocks) -> list[list[int]]:
        """Per pool, the hit's cached-free blocks, first evicted first (descending position
        across groups): what a reservation of the hit holds."""
        return [[b for b in self._tail_first(hit, managers) if b != NULL_BLOCK_ID and not pool.ref_cnt[b]]
                for managers, pool in zip(self._managers_of_pool, self.coordinator.pool_list, strict=True)]

    def free_request(self, rb: RequestBlocks) -> None:
        """Warm the cold blocks the hit at the request's final length needs (a window's first
        block, the last checkpoint: released early, yet what its next turn hits), release every
        held block in descending token position across groups, then let the blocks it protected
        age behind them."""
        if self.enable_caching:
            alignment = self.coordinator.hit_alignment
            final_len = rb.request.num_computed_tokens // alignment * alignment
            for pool, block_id in self.coordinator.released_hit_blocks(rb, final_len):
                pool.warm((block_id,))
        for managers in self._managers_of_pool:
            if managers:
                managers[0].pool.release_blocks(self._tail_first(rb.block_ids, managers, rb.num_skipped_blocks))
        self._unprotect(rb)

    def _unprotect(self, rb: RequestBlocks) -> None:
        """The request stops: the blocks it protected age like everything else, except those
        that were since evicted and protected again by another request (still that one's)."""
        for m in self.coordinator.holders:
            owner = rb.protected_block_ids[m.group_id]
            if owner:
                protected_by = self._protected_by[m.pool.pool_id]
                m.pool.unprotect([b for b in owner if protected_by[b] is owner])

    @staticmethod
    def _tail_first(block_ids: Sequence[Sequence[int]], managers: list[KindManager],
                    num_skipped: Sequence[int] | None = None) -> list[int]:
        """The blocks of these groups' tables (`block_ids[group id]`: a request's, or a hit) by
        descending end position (ties: later group first); null entries may be included.
        `num_skipped[group id]`, when given, says that many leading entries are null: they are
        left out (a request's out-of-window positions: most of a long prompt's table)."""
        tables = [block_ids[m.group_id] for m in reversed(managers)]
        if len({m.block_size for m in managers}) == 1:
            starts = [0] * len(tables) if num_skipped is None else [num_skipped[m.group_id] for m in reversed(managers)]
            result: list[int] = []
            stop = max(len(t) for t in tables)
            # Position ranges [start, stop) between the distinct skip frontiers, from the top:
            # in each, the tables not skipped there, interleaved position by position.
            for start in sorted({0, *starts}, reverse=True):
                if start >= stop:
                    continue
                columns = [[NULL_BLOCK_ID] * (stop - max(len(t), start)) + list(t[start:stop][::-1])
                           for t, first in zip(tables, starts, strict=True) if first <= start]
                result += columns[0] if len(columns) == 1 else chain.from_iterable(zip(*columns, strict=True))
                stop = start
            return result
        keyed = [((pos + 1) * m.block_size, -i, block_id)
                 for i, m in enumerate(managers)
                 for pos, block_id in enumerate(block_ids[m.group_id]) if block_id != NULL_BLOCK_ID]
        keyed.sort(reverse=True)
        return [block_id for _, _, block_id in keyed]


def _hits(requests: Iterable[Request], hit_of: HitOf) -> Iterator[HitBlocks]:
    """The hit blocks of each request with a hit, looked up when consumed."""
    for request in requests:
        hit = hit_of(request)
        if hit is not None:
            yield hit
