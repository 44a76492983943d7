"""LanePool: one entry per position for a lane's groups; counts in physical blocks, hand-traced."""

from __future__ import annotations

import pytest
from hkv.runtime.kv_cache.free_block_queue import FreeSegment
from hkv.runtime.kv_cache.lane_pool import LanePool

H1, H2, H3 = b"h1" * 8, b"h2" * 8, b"h3" * 8


def lane_pool(num_blocks: int = 10) -> LanePool:
    """A lane of groups 0-2 (entries weigh 3) and group 3 alone (weight 1)."""
    return LanePool(0, num_blocks, 4, {0: (0, 1, 2), 3: (3,)})


def test_lifecycle_table() -> None:
    """A hand-traced sequence on 9 usable blocks."""
    pool = lane_pool()
    # 1. Two positions of the lane: two entries, six blocks; group 3 one entry, one block.
    assert pool.allocate(2, 0) == [1, 2]
    assert pool.allocate(1, 3) == [3]
    assert (pool.num_free_blocks, pool.num_loose_blocks) == (2, 2)
    assert pool.num_in_use_by_group == [2, 2, 2, 1]
    pool.check_integrity([(1, 0), (2, 0), (3, 3)])
    # 2. Cached once for the lane; every group of it reads the lane's map.
    assert pool.cache_blocks([1, 2], [H1, H2], 0) == 2
    assert pool.cached_map(2) is pool.cached_map(0) and pool.cached_map(1)[H1] == 1
    # 3. Freed tail first: cached entries queue whole, the blocks count free again.
    pool.release_blocks([2, 1], 0)
    assert pool.free_segments()[FreeSegment.MAIN] == [2, 1]
    assert (pool.num_free_blocks, pool.num_in_use_by_group) == (8, [0, 0, 0, 1])
    pool.check_integrity([(3, 3)])
    # 4. One block for group 3 comes from the loose ones: nothing is evicted.
    assert pool.allocate(1, 3) == [4]
    assert pool.num_evictions == 0 and pool.num_loose_blocks == 1
    # 5. A lane position needs 3 blocks, 1 is loose: the LRU entry (2, three blocks) is evicted
    # whole, its id reused; one block of it would not have served a hit.
    assert pool.allocate(1, 0) == [2]
    assert (pool.num_evictions, pool.num_evictions_by_group) == (3, [1, 1, 1, 0])
    assert H2 not in pool.cached_map(0) and pool.num_loose_blocks == 1
    # 6. A hit on entry 1 takes its three blocks out of the free queue.
    pool.touch([0, 1], 0)
    assert (pool.num_free_blocks, pool.num_in_use_by_group) == (1, [2, 2, 2, 2])
    pool.check_integrity([(1, 0), (2, 0), (3, 3), (4, 3)])


@pytest.mark.parametrize(("segment", "protected", "free_for_admissions"), [
    (FreeSegment.MAIN, 0, 9),
    (FreeSegment.COLD, 0, 9),
    (FreeSegment.PROTECTED, 6, 3),
])
def test_segments_count_blocks(segment: FreeSegment, protected: int, free_for_admissions: int) -> None:
    pool = lane_pool()
    entries = pool.allocate(2, 0)
    pool.cache_blocks(entries, [H1, H2], 0)
    assert pool.release_to(entries[::-1], segment, 0) == entries[::-1]
    assert pool.num_protected_blocks == protected
    assert pool.num_unprotected_free_blocks == free_for_admissions
    pool.unprotect(entries)
    assert pool.num_protected_blocks == 0 and pool.num_unprotected_free_blocks == 9
    pool.check_integrity([])


def test_reservations_count_blocks() -> None:
    pool = lane_pool()
    lane = pool.allocate(1, 0)
    alone = pool.allocate(1, 3)
    pool.cache_blocks(lane, [H1], 0)
    pool.cache_blocks(alone, [H2], 3)
    pool.release_blocks(lane + alone)
    pool.reserve(lane)
    assert pool.num_reserved_blocks == 3
    pool.reserve_front(alone)
    assert pool.num_reserved_blocks == 4
    assert pool.num_blocks_of(lane + alone) == 4
    # 6 blocks wanted, 5 loose: eviction reaches the reserved segment (main is empty) and takes
    # its first entry, the one-block one reserved in front; the lane's entry stays reserved.
    new = pool.allocate(2, 0)
    assert (pool.num_reserved_blocks, pool.num_evictions, pool.num_free_blocks) == (3, 1, 3)
    pool.check_integrity([(e, 0) for e in new])


def test_a_cached_free_copy_gives_its_key_to_the_new_entry() -> None:
    pool = lane_pool()
    old = pool.allocate(1, 0)
    pool.cache_blocks(old, [H3], 0)
    pool.release_blocks(old, 0)
    new = pool.allocate(1, 0)
    assert pool.cache_blocks(new, [H3], 0) == 1
    assert pool.cached_map(0)[H3] == new[0] and pool.num_replaced == 1
    assert pool.num_free_blocks == 6 and not pool.free_segments()[FreeSegment.MAIN]
    pool.check_integrity([(new[0], 0)])


def test_integrity_catches_a_lost_block() -> None:
    pool = lane_pool()
    pool.allocate(1, 0)
    pool._loose -= 1
    with pytest.raises(AssertionError, match="loose"):
        pool.check_integrity([(1, 0)])
