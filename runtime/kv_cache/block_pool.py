"""BlockPool: the physical blocks of one Pool of the Layout.

It knows block ids, reference counts, the free queue and the prefix-cache map, and nothing about
attention kinds, tokens or requests. Block 0 is the null block: it stands in for skipped
positions in block tables, is never handed out, never freed and never cached.

Block states (every usable block is in exactly one):
    in use       ref_cnt > 0, not queued, owned by one group (hashed or not)
    free         ref_cnt == 0, queued, no hash, no group
    cached-free  ref_cnt == 0, queued, hashed under (block hash, group id): a prefix-cache entry
                 that is reused on a hit and evicted (hash dropped) when popped for allocation;
                 in the cold, main, reserved or protected segment of the free queue: the
                 eviction policy picks the segment (see release_to, reserve, unprotect)

With `keep_duplicates` (vLLM's map) several blocks may hold one (block hash, group id) key: the
earliest registered one still cached serves hits, the later ones wait in `_duplicates` in
registration order, and each is evicted on its own. Without it a key has one block.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from hkv.runtime.kv_cache.free_block_queue import FreeBlockQueue, FreeSegment

NULL_BLOCK_ID = 0


class BlockPool:
    """`num_blocks` blocks of one pool (null block included) shared by the groups placed in it."""

    def __init__(self, pool_id: int, num_blocks: int, num_groups: int, keep_duplicates: bool = False) -> None:
        if num_blocks < 1:
            raise ValueError(f"pool {pool_id} needs at least the null block, got {num_blocks} blocks")
        self.pool_id = pool_id
        self.num_blocks = num_blocks
        self.ref_cnt = [0] * num_blocks
        self.block_hash: list[bytes | None] = [None] * num_blocks
        self.block_group: list[int | None] = [None] * num_blocks
        self.num_in_use_by_group = [0] * num_groups
        self.num_evictions = 0
        self.num_evictions_by_group = [0] * num_groups  # the same evictions, by the group that cached the block
        self.num_replaced = 0  # cached-free duplicates dropped in favour of an in-use copy
        # The prefix-cache map keyed by (block hash, group id): one dict per group id.
        self._cached: list[dict[bytes, int]] = [{} for _ in range(num_groups)]
        # keep_duplicates: per group, hash -> later copies (registration order), beside _cached.
        self.keep_duplicates = keep_duplicates
        self._duplicates: list[dict[bytes, list[int]]] = [{} for _ in range(num_groups)]
        self._queue = FreeBlockQueue(num_blocks, range(1, num_blocks))

    @property
    def num_usable_blocks(self) -> int:
        return self.num_blocks - 1

    @property
    def num_free_blocks(self) -> int:
        """Free plus cached-free blocks: what an allocation can take."""
        return len(self._queue)

    @property
    def num_protected_blocks(self) -> int:
        return self._queue.num_protected

    @property
    def num_reserved_blocks(self) -> int:
        return self._queue.num_reserved

    @property
    def num_unprotected_free_blocks(self) -> int:
        """Free blocks an admission may take: the protected segment is left to running requests
        (reserved blocks count: a reservation only orders evictions)."""
        return len(self._queue) - self._queue.num_protected

    def num_blocks_of(self, block_ids: Sequence[int]) -> int:
        """Physical blocks the given (distinct, non-null) block ids stand for: one each here
        (LanePool's entries stand for several)."""
        return len(block_ids)

    def free_segments(self) -> dict[FreeSegment, list[int]]:
        """The free and cached-free block ids of each segment of the free queue, segments and
        blocks in the order allocations take them (see FreeBlockQueue). Copies; O(num_blocks):
        a read-only view for checks, not for hot paths."""
        return self._queue.segments()

    def cached_map(self, group_id: int) -> dict[bytes, int]:
        """The live hash -> block id map of a group; read it, never mutate it."""
        return self._cached[group_id]

    def allocate(self, num_blocks: int, group_id: int) -> list[int]:
        """Pop `num_blocks` blocks from the front of the free queue for `group_id`, ref_cnt 1.

        Popped cached blocks are evicted (their map entry dropped). The caller checks
        `num_free_blocks` first; asking for more raises AssertionError.
        """
        block_ids = self._pop(num_blocks)
        ref_cnt, block_group = self.ref_cnt, self.block_group
        for block_id in block_ids:
            ref_cnt[block_id] = 1
            block_group[block_id] = group_id
        self.num_in_use_by_group[group_id] += num_blocks
        return block_ids

    def allocate_groups(self, num_blocks: int, group_ids: Sequence[int]) -> list[list[int]]:
        """`allocate(num_blocks, g)` for each group in order, in one pop."""
        if len(group_ids) == 1:
            return [self.allocate(num_blocks, group_ids[0])]
        block_ids = self._pop(num_blocks * len(group_ids))
        ref_cnt, block_group, in_use = self.ref_cnt, self.block_group, self.num_in_use_by_group
        result = []
        for i, group_id in enumerate(group_ids):
            blocks = block_ids[i * num_blocks:(i + 1) * num_blocks]
            for block_id in blocks:
                ref_cnt[block_id] = 1
                block_group[block_id] = group_id
            in_use[group_id] += num_blocks
            result.append(blocks)
        return result

    def _pop(self, num_blocks: int) -> list[int]:
        """Unlink the first `num_blocks` blocks of the free queue and evict the cached ones
        among them (map entry and hash dropped); their counts and groups are the caller's."""
        queue = self._queue
        num_uncached = queue.num_front  # blocks freed uncached: the queue's front part
        block_ids = queue.popleft_n(num_blocks)
        block_hash, block_group = self.block_hash, self.block_group
        if num_blocks > num_uncached:  # the rest may be cached: evict them
            keep_duplicates = self.keep_duplicates
            evicted_by_group = self.num_evictions_by_group
            num_evicted = 0
            for block_id in block_ids[num_uncached:]:
                old_hash = block_hash[block_id]
                if old_hash is not None:
                    old_group = block_group[block_id]
                    if keep_duplicates:
                        self._drop_entry(block_id, old_hash, old_group)  # type: ignore[arg-type]
                    else:
                        del self._cached[old_group][old_hash]  # type: ignore[index]
                    evicted_by_group[old_group] += 1  # type: ignore[index]
                    block_hash[block_id] = None
                    num_evicted += 1
            self.num_evictions += num_evicted
        return block_ids

    def _drop_entry(self, block_id: int, block_hash: bytes, group_id: int) -> None:
        """Remove block_id's map entry (keep_duplicates): the next copy, if any, takes its place."""
        cached, duplicates = self._cached[group_id], self._duplicates[group_id]
        copies = duplicates.get(block_hash)
        if cached[block_hash] == block_id:
            if copies:
                cached[block_hash] = copies.pop(0)
                if not copies:
                    del duplicates[block_hash]
            else:
                del cached[block_hash]
        else:
            copies.remove(block_id)  # type: ignore[union-attr]
            if not copies:
                del duplicates[block_hash]

    def touch(self, block_ids: Sequence[int], group_id: int) -> None:
        """Take one more reference on each non-null block (cache hits); free ones leave the queue."""
        ref_cnt, block_group = self.ref_cnt, self.block_group
        free: list[int] = []
        for block_id in block_ids:
            if block_id == NULL_BLOCK_ID:
                continue
            assert block_group[block_id] == group_id, (
                f"block {block_id} of group {block_group[block_id]} touched for group {group_id}")
            ref = ref_cnt[block_id]
            if ref == 0:
                free.append(block_id)
            ref_cnt[block_id] = ref + 1
        if free:
            self._take_from_queue(free, group_id)

    def _take_from_queue(self, block_ids: list[int], group_id: int) -> None:
        """Free blocks a hit takes back: out of the free queue, into group `group_id`'s use."""
        self._queue.remove_many(block_ids)
        self.num_in_use_by_group[group_id] += len(block_ids)

    def release_blocks(self, block_ids: Sequence[int], group_id: int | None = None) -> None:
        """Drop one reference per block, as one batch (vLLM's free_blocks), in eviction priority
        order: the cached ones reaching zero are appended to the back of the main segment (LRU)
        in that order, the uncached ones put in front in that order (the first one is reused
        first). Null blocks are skipped. `group_id`: every block is that group's (a faster
        count), else each block's own group is read. A block listed twice loses two references."""
        self._release(block_ids, True, group_id)

    def release_to(self, block_ids: Sequence[int], segment: FreeSegment, group_id: int | None = None) -> list[int]:
        """`release_blocks`, except that the cached blocks reaching zero go, in order, to the
        back of `segment` of the free queue; returns them."""
        cached = self._release(block_ids, False, group_id)
        if cached:
            self._queue.extend_segment(segment, cached)
        return cached

    def _release(self, block_ids: Sequence[int], queue_cached: bool, group_id: int | None) -> list[int]:
        """Drop one reference per block; queue the uncached ones reaching zero at the front and,
        with `queue_cached`, the cached ones at the back of the main segment. Returns the cached
        ones reaching zero that were left unqueued (none with `queue_cached`).
        (Hot: a window's prefill releases hundreds of blocks; the loop does the least per block,
        and with `group_id` that group's counter is updated once after it.)"""
        ref_cnt, block_hash, block_group = self.ref_cnt, self.block_hash, self.block_group
        cached: list[int] = []
        uncached: list[int] = []
        add_cached, add_uncached = cached.append, uncached.append
        in_use = self.num_in_use_by_group
        for block_id in block_ids:
            ref = ref_cnt[block_id]
            if ref == 1:
                ref_cnt[block_id] = 0
                if group_id is None:
                    in_use[block_group[block_id]] -= 1  # type: ignore[index]
                if block_hash[block_id] is None:
                    block_group[block_id] = None
                    add_uncached(block_id)
                else:
                    add_cached(block_id)
            elif block_id != NULL_BLOCK_ID:  # the null block's count stays 0
                assert ref > 1, f"release of free block {block_id}"
                ref_cnt[block_id] = ref - 1
        if group_id is not None:
            in_use[group_id] -= len(uncached) + len(cached)
        queue = self._queue
        if uncached:
            uncached.reverse()  # the first uncached block ends up first
            queue.extendleft(uncached)
        if queue_cached and cached:
            queue.extend(cached)
            return []
        return cached

    def unprotect(self, block_ids: Sequence[int]) -> None:
        """Move the given blocks that are in the protected segment to the back of the main
        segment; others are left where they are."""
        self._queue.unprotect(block_ids)

    def warm(self, block_ids: Sequence[int]) -> None:
        """Move the given blocks that are in the cold segment (see release_to) to the back of
        the main segment; others are left where they are."""
        self._queue.warm(block_ids)

    def reserve(self, block_ids: Sequence[int]) -> None:
        """Make the reserved segment (evicted after the main segment, before the protected one)
        hold exactly the given cached-free blocks, the first one evicted first; blocks not
        cached-free or protected are skipped, and the ones reserved before that are not given
        move to the back of the main segment (see FreeBlockQueue.reserve)."""
        self._queue.reserve(block_ids)

    def reserve_front(self, block_ids: Sequence[int]) -> None:
        """Put the given cached-free blocks of the main or cold segment at the front of the
        reserved segment, in order, ahead of those reserved before (see
        FreeBlockQueue.reserve_front); others are skipped."""
        self._queue.reserve_front(block_ids)

    def cache_block(self, block_id: int, block_hash: bytes, group_id: int) -> bool:
        """Register an in-use block under (block_hash, group_id). Returns False (no change) if the
        block is already hashed. Another block holding the key: with keep_duplicates the block
        is registered after it; otherwise, False if that holder is in use, and a cached-free
        holder (an identical copy) loses the key and becomes a plain free block."""
        return self.cache_blocks((block_id,), (block_hash,), group_id) == 1

    def cache_blocks(self, block_ids: Sequence[int], block_hashes: Sequence[bytes], group_id: int) -> int:
        """`cache_block` for each (block, hash) pair of in-use blocks of `group_id` (not checked
        here: check_integrity catches a violation); null and already hashed blocks are skipped.
        Returns how many were registered."""
        cached = self._cached[group_id]
        hash_of, ref_cnt = self.block_hash, self.ref_cnt
        keep_duplicates = self.keep_duplicates
        num_cached = 0
        for block_id, block_hash in zip(block_ids, block_hashes, strict=True):
            if block_id == NULL_BLOCK_ID or hash_of[block_id] is not None:
                continue
            holder = cached.setdefault(block_hash, block_id)  # one lookup: registers a free key
            if holder != block_id:
                if keep_duplicates:
                    self._duplicates[group_id].setdefault(block_hash, []).append(block_id)
                elif ref_cnt[holder] > 0:
                    continue
                else:
                    # The key is held by a cached-free duplicate: keep the in-use copy, free the other.
                    hash_of[holder] = None
                    self.block_group[holder] = None
                    self._queue.move_to_front(holder)
                    self.num_replaced += 1
                    cached[block_hash] = block_id
            hash_of[block_id] = block_hash
            num_cached += 1
        return num_cached

    def num_free_among(self, block_ids: Sequence[int]) -> int:
        """How many of the non-null `block_ids` are free (ref_cnt 0): a hit takes them out of
        the free queue."""
        ref_cnt = self.ref_cnt
        return sum(1 for b in block_ids if b != NULL_BLOCK_ID and ref_cnt[b] == 0)

    def num_held_or_protected(self, block_ids: Sequence[int]) -> int:
        """How many of the non-null `block_ids` (nulls leading, as in a hit) are in use or
        protected (counted with C-level maps)."""
        first = block_ids.count(NULL_BLOCK_ID)
        if first == len(block_ids):
            return 0
        blocks = block_ids[first:]
        num_free = list(map(self.ref_cnt.__getitem__, blocks)).count(0)
        if not num_free or not self._queue.num_protected:
            return len(blocks) - num_free
        return len(blocks) - num_free + self._queue.count_protected(blocks)

    def check_integrity(self, references: Sequence[tuple[int, int]]) -> None:
        """Verify every invariant of the pool against the live `references`, one
        (block id, group id) pair per reference a request holds. Raises AssertionError."""
        tag = f"pool {self.pool_id}"
        self._queue.check_integrity()
        counts = Counter(block_id for block_id, _ in references)
        for block_id, group_id in references:
            assert 0 < block_id < self.num_blocks, f"{tag}: reference to block {block_id}"
            assert self.block_group[block_id] == group_id, (
                f"{tag}: block {block_id} owned by group {self.block_group[block_id]}, "
                f"referenced by group {group_id} (a block in two groups?)")
        assert self.ref_cnt[NULL_BLOCK_ID] == 0 and NULL_BLOCK_ID not in set(self._queue), f"{tag}: null block"
        assert self.block_hash[NULL_BLOCK_ID] is None, f"{tag}: null block is hashed"
        num_free = num_cached_free = num_in_use = 0
        in_use_by_group = [0] * len(self.num_in_use_by_group)
        queued_blocks = set(self._queue)
        front = set(self._queue.segments()[FreeSegment.FRONT])
        for block_id in range(1, self.num_blocks):
            ref = self.ref_cnt[block_id]
            assert ref == counts[block_id], (
                f"{tag}: block {block_id} ref_cnt {ref} != {counts[block_id]} live references")
            assert block_id not in front or self.block_hash[block_id] is None, (
                f"{tag}: cached block {block_id} in the queue's front part (evicted unchecked)")
            queued = block_id in queued_blocks
            assert queued == (ref == 0), f"{tag}: block {block_id} ref_cnt {ref} but queued={queued}"
            owner_group = self.block_group[block_id]
            block_hash = self.block_hash[block_id]
            if ref:
                num_in_use += 1
                assert owner_group is not None, f"{tag}: in-use block {block_id} has no group"
                in_use_by_group[owner_group] += 1
            elif block_hash is None:
                num_free += 1
                assert owner_group is None, f"{tag}: free block {block_id} still owned by group {owner_group}"
            else:
                num_cached_free += 1
            assert not self._queue.is_protected(block_id) or block_hash is not None, (
                f"{tag}: protected block {block_id} is not cached")
            assert not self._queue.is_cold(block_id) or block_hash is not None, (
                f"{tag}: cold block {block_id} is not cached")
            assert not self._queue.is_reserved(block_id) or block_hash is not None, (
                f"{tag}: reserved block {block_id} is not cached")
            if block_hash is not None:
                assert owner_group is not None and (
                    self._cached[owner_group].get(block_hash) == block_id
                    or block_id in self._duplicates[owner_group].get(block_hash, ())), (
                    f"{tag}: block {block_id} hashed but not in the map of group {owner_group}")
        assert num_free + num_cached_free + num_in_use == self.num_usable_blocks, f"{tag}: lost blocks"
        assert in_use_by_group == self.num_in_use_by_group, (
            f"{tag}: in-use counters {self.num_in_use_by_group} != {in_use_by_group}")
        num_entries = 0
        assert self.keep_duplicates or not any(self._duplicates), f"{tag}: duplicates kept"
        for group_id, (cached, duplicates) in enumerate(zip(self._cached, self._duplicates, strict=True)):
            entries = list(cached.items())
            for block_hash, copies in duplicates.items():
                assert copies and block_hash in cached, f"{tag}: stray duplicate list of group {group_id}"
                entries.extend((block_hash, block_id) for block_id in copies)
            for block_hash, block_id in entries:
                num_entries += 1
                assert 0 < block_id < self.num_blocks, f"{tag}: map entry -> block {block_id}"
                assert self.block_hash[block_id] == block_hash, (
                    f"{tag}: map entry of group {group_id} -> block {block_id} whose hash differs")
                assert self.block_group[block_id] == group_id, (
                    f"{tag}: map entry of group {group_id} -> block {block_id} of another group")
        num_hashed = sum(h is not None for h in self.block_hash)
        assert num_entries == num_hashed, f"{tag}: {num_entries} map entries, {num_hashed} hashed blocks"
