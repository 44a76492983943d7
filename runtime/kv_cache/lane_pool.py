"""LanePool: the physical blocks of one Pool, handed out one lane entry at a time.

A lane (see lanes.py) is a run of lockstep groups: groups that always allocate, cache, release
and free the same block positions at the same time (Gemma-3's sliding groups of hkv's layout).
BlockPool gives each of them its own block per position, so every operation costs one step per
group. Here one *entry* stands for the lane's blocks at one position: `weight` physical blocks,
one per group of the lane, moving together. Entry ids are only names (no tensor sits behind
them: a simulated replay), so the pool keeps no id for a free uncached block at all:

    loose        free uncached physical blocks: a count (BlockPool's front of the free queue)
    in use       an entry, ref_cnt > 0, owned by its lane (named by its lead group id)
    cached-free  an entry, ref_cnt == 0, hashed under (hash, lead group id), queued in the
                 cold, main, reserved or protected segment as BlockPool's blocks are

Allocation takes loose blocks first, then evicts whole cached-free entries in queue order (an
entry's blocks serve a hit only together, so evicting part of one would save nothing); what
an evicted entry frees beyond the request stays loose. Entry ids come from a stack of spare ids:
at most one entry per physical block can be live. Counts (free, protected, reserved, in use,
evictions) are in physical blocks and per group, as BlockPool's, so a report reads the same.

The interface is BlockPool's with group ids meaning lead group ids: callers act once per lane.
`cached_map` of any group of a lane is the lane's map. Only DuplicateBlocks.DROP (one entry per
key) is supported.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from itertools import islice

from hkv.runtime.kv_cache.block_pool import NULL_BLOCK_ID, BlockPool
from hkv.runtime.kv_cache.free_block_queue import FreeBlockQueue, FreeSegment


class _EntryQueue(FreeBlockQueue):
    """The free queue of cached-free entries; the front part stays empty (loose blocks are a
    count). Adds what weight bookkeeping needs: the reserved segment as a view, and a pop by
    weight."""

    def reserved_ids(self) -> Sequence[int]:
        return list(self._reserved)

    def popleft_weight(self, amount: int, weight_of: Callable[[int], int]) -> tuple[list[int], int, int, int]:
        """Unlink entries from the front, in queue order, until their weights reach `amount`
        (or the queue is empty); returns them, their total weight and the weights of those
        that were reserved and protected."""
        taken: list[int] = []
        total = reserved = protected = 0
        for segment in (self._cold, self._main, self._reserved, self._protected):
            if total >= amount:
                break
            num_taken = 0
            segment_weight = 0
            for entry in segment:
                segment_weight += weight_of(entry)
                num_taken += 1
                if total + segment_weight >= amount:
                    break
            if num_taken:
                entries = list(islice(segment, num_taken))
                for entry in entries:
                    del segment[entry]
                taken += entries
                total += segment_weight
                if segment is self._reserved:
                    reserved = segment_weight
                elif segment is self._protected:
                    protected = segment_weight
        return taken, total, reserved, protected


class LanePool(BlockPool):
    """`num_blocks` physical blocks (null block included) of one pool; `lanes` maps each lead
    group id placed here to the group ids of its lane (itself first). A BlockPool by type (it
    stands wherever one does), every operation its own."""

    def __init__(self, pool_id: int, num_blocks: int, num_groups: int,
                 lanes: Mapping[int, Sequence[int]]) -> None:
        super().__init__(pool_id, num_blocks, num_groups, keep_duplicates=False)
        self.lanes = {lead: tuple(gids) for lead, gids in lanes.items()}
        # Per group id: the weight of an entry of its lane (0: not a lead of this pool).
        self.weight = [0] * num_groups
        self._lead_of = list(range(num_groups))
        for lead, gids in self.lanes.items():
            self.weight[lead] = len(gids)
            for gid in gids:
                self._lead_of[gid] = lead
        self.ref_cnt = [0] * num_blocks  # per entry id
        self.block_hash: list[bytes | None] = [None] * num_blocks
        self.block_group: list[int | None] = [None] * num_blocks  # the lead of a live entry
        self.num_in_use_by_group = [0] * num_groups  # in-use entries of the group's lane
        self.num_evictions = 0  # physical blocks
        self.num_evictions_by_group = [0] * num_groups
        self.num_replaced = 0
        self._cached: list[dict[bytes, int]] = [{} for _ in range(num_groups)]  # per lead
        self._spare = list(range(num_blocks - 1, 0, -1))  # unused entry ids, the next one last
        self._loose = num_blocks - 1
        # The entry queue in an attribute of its own type (BlockPool's `_queue` is typed
        # FreeBlockQueue, and a compiled build calls _EntryQueue's methods natively only through
        # an _EntryQueue-typed attribute); `_queue` names the same queue, so nothing inherited
        # sees BlockPool's block queue.
        self._entries = _EntryQueue(num_blocks, ())
        self._queue = self._entries
        self._queued_weight = 0  # physical blocks of the queued (cached-free) entries
        self._protected_weight = 0
        self._reserved_weight = 0

    # ---- counts (physical blocks) ------------------------------------------------------------

    @property
    def num_usable_blocks(self) -> int:
        return self.num_blocks - 1

    @property
    def num_free_blocks(self) -> int:
        return self._loose + self._queued_weight

    @property
    def num_protected_blocks(self) -> int:
        return self._protected_weight

    @property
    def num_reserved_blocks(self) -> int:
        return self._reserved_weight

    @property
    def num_unprotected_free_blocks(self) -> int:
        return self._loose + self._queued_weight - self._protected_weight

    @property
    def num_loose_blocks(self) -> int:
        """Free uncached physical blocks (they have no entry)."""
        return self._loose

    def num_blocks_of(self, block_ids: Sequence[int]) -> int:
        """Physical blocks the given (distinct, non-null) live entries stand for."""
        return self._weight_of(block_ids)

    def free_segments(self) -> dict[FreeSegment, list[int]]:
        """The cached-free entries of each segment in eviction order (FRONT is always empty:
        loose blocks have no id, see num_loose_blocks). Copies; not for hot paths."""
        return self._entries.segments()

    def cached_map(self, group_id: int) -> dict[bytes, int]:
        """The live hash -> entry map of the group's lane; read it, never mutate it."""
        return self._cached[self._lead_of[group_id]]

    # ---- allocation --------------------------------------------------------------------------

    def allocate(self, num_blocks: int, group_id: int) -> list[int]:
        """`num_blocks` new entries of lane `group_id` (ref_cnt 1): loose blocks first, then
        cached-free entries evicted in queue order. The caller checks `num_free_blocks` for
        num_blocks * weight first; asking for more raises AssertionError."""
        if num_blocks <= 0:
            return []
        need = num_blocks * self.weight[group_id]
        if need > self._loose:
            self._evict(need - self._loose)
        self._loose -= need
        spare = self._spare
        entries = spare[-num_blocks:]
        del spare[-num_blocks:]
        entries.reverse()
        ref_cnt, block_group = self.ref_cnt, self.block_group
        for entry in entries:
            ref_cnt[entry] = 1
            block_group[entry] = group_id
        in_use = self.num_in_use_by_group
        for gid in self.lanes[group_id]:
            in_use[gid] += num_blocks
        return entries

    def allocate_groups(self, num_blocks: int, group_ids: Sequence[int]) -> list[list[int]]:
        """`allocate(num_blocks, g)` for each lead in order."""
        return [self.allocate(num_blocks, gid) for gid in group_ids]

    def _evict(self, amount: int) -> None:
        """Evict cached-free entries from the queue's front until at least `amount` physical
        blocks are loose beyond what was loose before."""
        weight, block_hash, block_group = self.weight, self.block_hash, self.block_group
        evicted_by_group, cached, lanes = self.num_evictions_by_group, self._cached, self.lanes
        entries, freed, reserved, protected = self._entries.popleft_weight(
            amount, lambda entry: weight[block_group[entry]])  # type: ignore[index]
        assert freed >= amount, f"lane pool {self.pool_id}: eviction of {amount} blocks from {freed} queued"
        self._reserved_weight -= reserved
        self._protected_weight -= protected
        for entry in entries:
            lead = block_group[entry]
            del cached[lead][block_hash[entry]]  # type: ignore[index,arg-type]
            for gid in lanes[lead]:  # type: ignore[index]
                evicted_by_group[gid] += 1
            block_hash[entry] = None
            block_group[entry] = None
        self._spare.extend(entries)
        self._queued_weight -= freed
        self.num_evictions += freed
        self._loose += freed

    def _take_from_queue(self, block_ids: list[int], group_id: int) -> None:
        """BlockPool.touch's free entries of lane `group_id`: out of the queue (weights kept), into
        the use of every group of the lane."""
        self._unqueue(block_ids)
        in_use = self.num_in_use_by_group
        for gid in self.lanes[group_id]:
            in_use[gid] += len(block_ids)

    def _unqueue(self, entries: Sequence[int]) -> None:
        """Take queued entries out of the free queue, keeping the weights."""
        queue, weight, block_group = self._entries, self.weight, self.block_group
        total = 0
        for entry in entries:
            w = weight[block_group[entry]]  # type: ignore[index]
            total += w
            if queue.is_protected(entry):
                self._protected_weight -= w
            elif queue.is_reserved(entry):
                self._reserved_weight -= w
        queue.remove_many(entries)
        self._queued_weight -= total

    # ---- release -----------------------------------------------------------------------------

    def release_blocks(self, block_ids: Sequence[int], group_id: int | None = None) -> None:
        """Drop one reference per entry (nulls skipped): uncached entries reaching zero become
        loose blocks, cached ones go to the back of the main segment in order. `group_id`: every
        entry is that lane's, else each entry's own lane is read."""
        self._release_entries(block_ids, FreeSegment.MAIN, group_id)

    def release_to(self, block_ids: Sequence[int], segment: FreeSegment, group_id: int | None = None) -> list[int]:
        """`release_blocks` with the cached entries reaching zero queued at the back of
        `segment` (COLD, MAIN or PROTECTED); returns them."""
        return self._release_entries(block_ids, segment, group_id)

    def _release_entries(self, block_ids: Sequence[int], segment: FreeSegment, group_id: int | None) -> list[int]:
        ref_cnt, block_hash, block_group, weight = self.ref_cnt, self.block_hash, self.block_group, self.weight
        cached: list[int] = []
        uncached: list[int] = []
        for entry in block_ids:
            ref = ref_cnt[entry]
            if ref == 1:
                ref_cnt[entry] = 0
                if block_hash[entry] is None:
                    uncached.append(entry)
                else:
                    cached.append(entry)
            elif entry != NULL_BLOCK_ID:
                assert ref > 1, f"release of free entry {entry}"
                ref_cnt[entry] = ref - 1
        in_use, lanes = self.num_in_use_by_group, self.lanes
        if group_id is not None:
            n = len(uncached) + len(cached)
            if n:
                for gid in lanes[group_id]:
                    in_use[gid] -= n
            loose = len(uncached) * weight[group_id]
            queued = len(cached) * weight[group_id]
        else:  # entries of several lanes: count per lane, then per group once
            loose = queued = 0
            freed_per_lead: Counter[int] = Counter(map(block_group.__getitem__, uncached))  # type: ignore[arg-type]
            for lead, n in freed_per_lead.items():
                loose += weight[lead] * n
            queued_per_lead: Counter[int] = Counter(map(block_group.__getitem__, cached))  # type: ignore[arg-type]
            for lead, n in queued_per_lead.items():
                queued += weight[lead] * n
            freed_per_lead.update(queued_per_lead)
            for lead, n in freed_per_lead.items():
                for gid in lanes[lead]:
                    in_use[gid] -= n
        if uncached:
            for entry in uncached:
                block_group[entry] = None
            self._spare.extend(uncached)
            self._loose += loose
        if cached:
            self._entries.extend_segment(segment, cached)
            self._queued_weight += queued
            if segment is FreeSegment.PROTECTED:
                self._protected_weight += queued
        return cached

    # ---- queue order -------------------------------------------------------------------------

    def unprotect(self, block_ids: Sequence[int]) -> None:
        """Move the given entries that are protected to the back of the main segment."""
        queue = self._entries
        moved = [e for e in block_ids if queue.is_protected(e)]
        if moved:
            self._protected_weight -= self._weight_of(moved)
            queue.unprotect(moved)

    def warm(self, block_ids: Sequence[int]) -> None:
        """Move the given entries that are cold to the back of the main segment."""
        self._entries.warm(block_ids)

    def reserve(self, block_ids: Sequence[int]) -> None:
        """As BlockPool.reserve, for entries."""
        self._entries.reserve(block_ids)
        self._reserved_weight = self._weight_of(self._entries.reserved_ids())

    def reserve_front(self, block_ids: Sequence[int]) -> None:
        """As BlockPool.reserve_front, for entries."""
        queue = self._entries
        taken = {e for e in block_ids
                 if e in queue and not queue.is_protected(e) and not queue.is_reserved(e)}
        queue.reserve_front(block_ids)
        self._reserved_weight += self._weight_of(taken)

    def _weight_of(self, entries: Sequence[int] | set[int]) -> int:
        weight, block_group = self.weight, self.block_group
        total = 0
        for e in entries:
            total += weight[block_group[e]]  # type: ignore[index]  # live entries have a lead
        return total

    # ---- prefix cache ------------------------------------------------------------------------

    def cache_block(self, block_id: int, block_hash: bytes, group_id: int) -> bool:
        return self.cache_blocks((block_id,), (block_hash,), group_id) == 1

    def cache_blocks(self, block_ids: Sequence[int], block_hashes: Sequence[bytes], group_id: int) -> int:
        """As BlockPool.cache_blocks (DROP): register in-use entries of lane `group_id` under
        their hashes; a key held by an in-use entry stays with it, one held by a cached-free
        entry (an identical copy) moves to the new entry and the old one's blocks become loose.
        Returns how many were registered."""
        cached = self._cached[group_id]
        hash_of, ref_cnt = self.block_hash, self.ref_cnt
        num_cached = 0
        for entry, block_hash in zip(block_ids, block_hashes, strict=True):
            if entry == NULL_BLOCK_ID or hash_of[entry] is not None:
                continue
            holder = cached.setdefault(block_hash, entry)
            if holder != entry:
                if ref_cnt[holder] > 0:
                    continue
                self._unqueue((holder,))
                hash_of[holder] = None
                self.block_group[holder] = None
                self._spare.append(holder)
                self._loose += self.weight[group_id]
                self.num_replaced += 1
                cached[block_hash] = entry
            hash_of[entry] = block_hash
            num_cached += 1
        return num_cached

    def num_free_among(self, block_ids: Sequence[int]) -> int:
        """How many of the non-null entries are free (ref_cnt 0): per group of their lane, the
        blocks a hit takes out of the free queue."""
        ref_cnt = self.ref_cnt
        return sum(1 for b in block_ids if b != NULL_BLOCK_ID and ref_cnt[b] == 0)

    def num_held_or_protected(self, block_ids: Sequence[int]) -> int:
        """How many of the non-null entries (nulls leading) are in use or protected: per group
        of their lane, as BlockPool counts blocks."""
        first = block_ids.count(NULL_BLOCK_ID)
        if first == len(block_ids):
            return 0
        entries = block_ids[first:]
        num_free = list(map(self.ref_cnt.__getitem__, entries)).count(0)
        if not num_free or not self._entries.num_protected:
            return len(entries) - num_free
        return len(entries) - num_free + self._entries.count_protected(entries)

    # ---- checks ------------------------------------------------------------------------------

    def check_integrity(self, references: Sequence[tuple[int, int]]) -> None:
        """Every invariant against the live `references`, one (entry, lead group id) pair per
        reference a request's lane table holds. Raises AssertionError."""
        tag = f"lane pool {self.pool_id}"
        queue = self._entries
        queue.check_integrity()
        segments = queue.segments()
        assert not segments[FreeSegment.FRONT], f"{tag}: an entry in the front part"
        counts = Counter(entry for entry, _ in references)
        for entry, referrer in references:
            assert 0 < entry < self.num_blocks, f"{tag}: reference to entry {entry}"
            assert self.block_group[entry] == referrer, (
                f"{tag}: entry {entry} of lane {self.block_group[entry]} referenced by lane {referrer}")
        assert self.ref_cnt[NULL_BLOCK_ID] == 0 and self.block_hash[NULL_BLOCK_ID] is None, f"{tag}: null block"
        queued = set(queue)
        spare = set(self._spare)
        assert len(spare) == len(self._spare) and NULL_BLOCK_ID not in spare, f"{tag}: spare ids"
        live_weight = 0
        in_use_by_group = [0] * len(self.num_in_use_by_group)
        for entry in range(1, self.num_blocks):
            ref, lead, block_hash = self.ref_cnt[entry], self.block_group[entry], self.block_hash[entry]
            assert ref == counts[entry], f"{tag}: entry {entry} ref_cnt {ref} != {counts[entry]} references"
            if entry in spare:
                assert ref == 0 and lead is None and block_hash is None and entry not in queued, (
                    f"{tag}: spare id {entry} is live")
                continue
            assert lead is not None and lead in self.lanes, f"{tag}: live entry {entry} has no lane"
            live_weight += self.weight[lead]
            assert (entry in queued) == (ref == 0), f"{tag}: entry {entry} ref_cnt {ref}, queued={entry in queued}"
            assert ref or block_hash is not None, f"{tag}: free entry {entry} is not cached"
            if ref:
                for gid in self.lanes[lead]:
                    in_use_by_group[gid] += 1
            if block_hash is not None:
                assert self._cached[lead].get(block_hash) == entry, f"{tag}: entry {entry} hashed, not mapped"
        assert live_weight + self._loose == self.num_usable_blocks, (
            f"{tag}: {live_weight} blocks in entries + {self._loose} loose != {self.num_usable_blocks}")
        assert in_use_by_group == self.num_in_use_by_group, (
            f"{tag}: in-use counters {self.num_in_use_by_group} != {in_use_by_group}")
        assert self._queued_weight == self._weight_of(queued), f"{tag}: queued weight"
        assert self._protected_weight == self._weight_of(segments[FreeSegment.PROTECTED]), f"{tag}: protected weight"
        assert self._reserved_weight == self._weight_of(segments[FreeSegment.RESERVED]), f"{tag}: reserved weight"
        num_entries = 0
        for lead, cached in enumerate(self._cached):
            for block_hash, entry in cached.items():
                num_entries += 1
                assert self.block_hash[entry] == block_hash and self.block_group[entry] == lead, (
                    f"{tag}: map entry of lane {lead} -> entry {entry} of another hash or lane")
        num_hashed = sum(h is not None for h in self.block_hash)
        assert num_entries == num_hashed, f"{tag}: {num_entries} map entries, {num_hashed} hashed entries"
