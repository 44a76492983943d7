"""BlockPool: allocation order, ref counts, caching, LRU eviction, duplicates and integrity."""

from __future__ import annotations

import pytest
from hkv.runtime.kv_cache.block_pool import NULL_BLOCK_ID, BlockPool
from hkv.runtime.kv_cache.free_block_queue import FreeSegment
from rt_pool import cached_block, free_block_ids, is_cached_free, is_protected

H1, H2, H3 = b"h1" * 8, b"h2" * 8, b"h3" * 8


def test_null_block_is_never_handed_out() -> None:
    pool = BlockPool(0, 4, num_groups=1)
    assert pool.num_usable_blocks == pool.num_free_blocks == 3
    assert sorted(pool.allocate(3, 0)) == [1, 2, 3]
    assert pool.num_free_blocks == 0
    pool.check_integrity([(1, 0), (2, 0), (3, 0)])


def test_one_block_pool_has_nothing_to_give() -> None:
    pool = BlockPool(0, 1, num_groups=1)
    assert pool.num_free_blocks == 0
    with pytest.raises(AssertionError):
        pool.allocate(1, 0)


def test_lifecycle_table() -> None:
    """A hand-traced sequence on a pool of 6 blocks (null + 5)."""
    pool = BlockPool(0, 6, num_groups=2)
    refs: list[tuple[int, int]] = []
    # 1. Group 0 takes two blocks, group 1 one: front of the queue, in id order.
    assert pool.allocate(2, 0) == [1, 2]
    assert pool.allocate(1, 1) == [3]
    refs += [(1, 0), (2, 0), (3, 1)]
    pool.check_integrity(refs)
    # 2. Cache 1 and 2 for group 0; caching twice is a no-op.
    assert pool.cache_block(1, H1, 0) and pool.cache_block(2, H2, 0)
    assert not pool.cache_block(1, H3, 0)
    assert cached_block(pool, H1, 0) == 1 and cached_block(pool, H1, 1) is None
    # 3. Release 2 then 1 (tail first): cached -> LRU back. Release 3 (uncached) -> front.
    pool.release_blocks([2])
    pool.release_blocks([1])
    pool.release_blocks([3])
    refs = []
    assert free_block_ids(pool) == [3, 4, 5, 2, 1]
    pool.check_integrity(refs)
    assert pool.num_in_use_by_group == [0, 0]
    # 4. A hit on H1 touches block 1: it leaves the queue with ref_cnt 1.
    pool.touch([NULL_BLOCK_ID, 1], 0)
    refs = [(1, 0)]
    assert free_block_ids(pool) == [3, 4, 5, 2] and pool.ref_cnt[1] == 1
    pool.check_integrity(refs)
    # 5. Four blocks for group 1: 3, 4, 5 are plain free, then 2 is evicted (H2 dropped).
    assert pool.allocate(4, 1) == [3, 4, 5, 2]
    refs += [(3, 1), (4, 1), (5, 1), (2, 1)]
    assert cached_block(pool, H2, 0) is None and pool.num_evictions == 1
    assert pool.num_in_use_by_group == [1, 4]
    pool.check_integrity(refs)


def test_shared_block_returns_to_queue_at_last_release() -> None:
    pool = BlockPool(0, 3, num_groups=1)
    [block] = pool.allocate(1, 0)
    pool.cache_block(block, H1, 0)
    pool.touch([block], 0)
    assert pool.ref_cnt[block] == 2
    pool.release_blocks([block])
    assert block not in free_block_ids(pool)
    pool.release_blocks([block])
    assert block in free_block_ids(pool) and is_cached_free(pool, block)
    pool.check_integrity([])


def test_cached_free_duplicate_gives_way_to_in_use_copy() -> None:
    pool = BlockPool(0, 5, num_groups=1)
    old, new = pool.allocate(2, 0)
    pool.cache_block(old, H1, 0)
    pool.release_blocks([old])  # cached-free, at the back: queue [3, 4, 1]
    assert pool.cache_block(new, H1, 0)
    assert cached_block(pool, H1, 0) == new
    assert pool.block_hash[old] is None and free_block_ids(pool)[0] == old  # plain free, reused next
    pool.check_integrity([(new, 0)])


def test_in_use_holder_keeps_its_key() -> None:
    pool = BlockPool(0, 4, num_groups=1)
    first, second = pool.allocate(2, 0)
    assert pool.cache_block(first, H1, 0)
    assert not pool.cache_block(second, H1, 0)
    assert pool.block_hash[second] is None
    pool.check_integrity([(first, 0), (second, 0)])


def test_released_cached_blocks_can_go_to_the_protected_segment() -> None:
    pool = BlockPool(0, 6, num_groups=1)
    a, b, c = pool.allocate(3, 0)
    pool.cache_block(a, H1, 0)
    pool.cache_block(b, H2, 0)
    pool.release_blocks([a])  # an ordinary cached release: main segment
    assert pool.release_to([b, c], FreeSegment.PROTECTED) == [b]  # c is uncached: plain free, front
    assert free_block_ids(pool) == [c, 4, 5, a, b] and is_protected(pool, b)
    assert (pool.num_free_blocks, pool.num_unprotected_free_blocks, pool.num_protected_blocks) == (5, 4, 1)
    assert pool.allocate(4, 0) == [c, 4, 5, a]  # the protected block goes last
    pool.unprotect([b])
    assert not is_protected(pool, b) and pool.num_unprotected_free_blocks == 1
    pool.check_integrity([(c, 0), (4, 0), (5, 0), (a, 0)])


def test_released_cached_blocks_in_the_cold_segment_go_first() -> None:
    """Pool of 7 (null + 6). A cached block released to the cold segment is evicted after the
    uncached free blocks but before every other cached block, older ones included."""
    pool = BlockPool(0, 7, num_groups=1)
    a, b, c, d = pool.allocate(4, 0)
    for block_id, block_hash in ((a, H1), (b, H2), (c, H3)):
        pool.cache_block(block_id, block_hash, 0)
    pool.release_blocks([a])  # an ordinary cached release: main segment
    assert pool.release_to([b, d], FreeSegment.COLD) == [b]  # b cached: cold; d uncached: front
    assert pool.release_to([c], FreeSegment.PROTECTED) == [c]
    assert free_block_ids(pool) == [d, 5, 6, b, a, c]
    assert (pool.num_free_blocks, pool.num_unprotected_free_blocks) == (6, 5)
    assert pool.allocate(4, 0) == [d, 5, 6, b]  # the cold block is evicted before a
    assert cached_block(pool, H2, 0) is None and cached_block(pool, H1, 0) == a
    pool.check_integrity([(d, 0), (5, 0), (6, 0), (b, 0)])


def test_cold_block_hit_leaves_the_queue() -> None:
    pool = BlockPool(0, 4, num_groups=1)
    a, b = pool.allocate(2, 0)
    pool.cache_block(a, H1, 0)
    pool.release_to([a], FreeSegment.COLD)
    pool.touch([a], 0)
    assert pool.num_free_blocks == 1 and pool.ref_cnt[a] == 1
    pool.check_integrity([(a, 0), (b, 0)])


@pytest.mark.parametrize(("corrupt", "message"), [
    (lambda p: p.ref_cnt.__setitem__(1, 2), "ref_cnt"),
    (lambda p: p.block_group.__setitem__(1, 1), "two groups"),
    (lambda p: p.cached_map(0).__setitem__(H2, 1), "hash differs"),
    (lambda p: p.block_hash.__setitem__(2, H3), "not in the map"),
    (lambda p: p.num_in_use_by_group.__setitem__(0, 5), "in-use counters"),
])
def test_integrity_violations_raise(corrupt, message: str) -> None:
    pool = BlockPool(0, 5, num_groups=2)
    a, _ = pool.allocate(2, 0)
    pool.cache_block(a, H1, 0)
    refs = [(1, 0), (2, 0)]
    pool.check_integrity(refs)
    corrupt(pool)
    with pytest.raises(AssertionError, match=message):
        pool.check_integrity(refs)


def test_missing_reference_is_detected() -> None:
    pool = BlockPool(0, 4, num_groups=1)
    pool.allocate(2, 0)
    with pytest.raises(AssertionError, match="ref_cnt 1 != 0"):
        pool.check_integrity([(1, 0)])


def test_batch_release_puts_uncached_blocks_in_front_in_list_order() -> None:
    """vLLM's free_blocks: the first uncached block of the batch is reused first."""
    pool = BlockPool(0, 6, num_groups=1)
    assert pool.allocate(3, 0) == [1, 2, 3]
    pool.release_blocks([3, 2, 1])  # tail first, as a request is freed
    assert free_block_ids(pool) == [3, 2, 1, 4, 5]
    pool.check_integrity([])


def test_keep_duplicates_registers_every_copy() -> None:
    """vLLM's map: copies of one key are all hashed; a hit gets the earliest one still cached;
    each copy is evicted on its own and the next one takes over."""
    pool = BlockPool(0, 6, num_groups=1, keep_duplicates=True)
    assert pool.allocate(3, 0) == [1, 2, 3]
    assert pool.cache_block(1, H1, 0) and pool.cache_block(2, H1, 0) and pool.cache_block(3, H1, 0)
    assert cached_block(pool, H1, 0) == 1
    pool.check_integrity([(1, 0), (2, 0), (3, 0)])
    pool.release_blocks([2, 1, 3])  # all cached: LRU back in that order
    assert free_block_ids(pool) == [4, 5, 2, 1, 3]
    pool.check_integrity([])
    assert pool.allocate(3, 0) == [4, 5, 2]  # evicts copy 2 (not the holder): 1 still serves hits
    assert cached_block(pool, H1, 0) == 1 and pool.num_evictions == 1
    pool.check_integrity([(4, 0), (5, 0), (2, 0)])
    assert pool.allocate(1, 0) == [1]  # evicts the holder: copy 3 takes over
    assert cached_block(pool, H1, 0) == 3
    pool.check_integrity([(4, 0), (5, 0), (2, 0), (1, 0)])
    assert pool.allocate(1, 0) == [3]
    assert cached_block(pool, H1, 0) is None
    pool.check_integrity([(4, 0), (5, 0), (2, 0), (1, 0), (3, 0)])


def test_without_keep_duplicates_an_in_use_copy_stays_unhashed() -> None:
    pool = BlockPool(0, 4, num_groups=1)
    assert pool.allocate(2, 0) == [1, 2]
    assert pool.cache_block(1, H1, 0) and not pool.cache_block(2, H1, 0)
    assert pool.block_hash[2] is None


def test_allocate_groups_hands_out_consecutive_runs() -> None:
    """Null + 7 blocks, two groups of 3: one pop of 6 from the front, ids 1..6, the first 3 to
    group 0 and the next 3 to group 1 (as allocate(3, 0) then allocate(3, 1) would)."""
    pool = BlockPool(0, 8, num_groups=2)
    assert pool.allocate_groups(3, [0, 1]) == [[1, 2, 3], [4, 5, 6]]
    assert pool.num_in_use_by_group == [3, 3] and pool.num_free_blocks == 1
    pool.check_integrity([(1, 0), (2, 0), (3, 0), (4, 1), (5, 1), (6, 1)])


def test_release_of_one_group_batch_with_shared_and_null_blocks() -> None:
    """A release naming its group (early releases) must leave the state a plain release leaves:
    group 0 holds 1, 2, 3 and a second request shares 2. Releasing [3, NULL, 2, 1] drops 3 and 1
    to zero (uncached: to the front, the first released first: 3, 1, then the untouched 4, 5),
    keeps 2 at one reference, and counts two blocks out of group 0."""
    for group_id in (None, 0):
        pool = BlockPool(0, 6, num_groups=1)
        assert pool.allocate(3, 0) == [1, 2, 3]
        pool.touch([2], 0)
        pool.release_blocks([3, NULL_BLOCK_ID, 2, 1], group_id)
        assert free_block_ids(pool) == [3, 1, 4, 5]
        assert pool.ref_cnt[1:4] == [0, 1, 0] and pool.num_in_use_by_group == [1]
        pool.check_integrity([(2, 0)])


def test_release_to_a_segment_names_the_cached_blocks() -> None:
    """Cached 1 and uncached 2 released to the cold segment with their group given: 1 goes to
    the cold segment and is returned, 2 to the front."""
    pool = BlockPool(0, 4, num_groups=1)
    assert pool.allocate(2, 0) == [1, 2]
    assert pool.cache_block(1, H1, 0)
    assert pool.release_to([2, 1], FreeSegment.COLD, 0) == [1]
    assert pool.free_segments()[FreeSegment.COLD] == [1] and free_block_ids(pool) == [2, 3, 1]
    pool.check_integrity([])
