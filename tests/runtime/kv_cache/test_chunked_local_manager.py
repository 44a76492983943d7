"""ChunkedLocalManager: hits inside the current chunk, free hits at chunk boundaries, release."""

from __future__ import annotations

import pytest
from hkv.runtime import NULL_BLOCK_ID, CacheConfig, EvictionPolicy, KVCacheManager, Request
from rt_layouts import CHUNKED, hit_len, ids, lone_manager, make_group, make_layout
from rt_pool import free_block_ids

# C = 4, block_size 2: a hit of p needs positions [(p // 4 * 4) // 2, p // 2).
HIT_CASES = [
    # (cached positions, max_len, alignment, expected hit)
    (set(), 20, 2, 20),  # 20 is a chunk boundary: nothing needed
    (set(), 19, 2, 16),  # p = 18 needs position 8 (missing) -> 16 is a boundary
    ({8}, 19, 2, 18),
    (set(), 19, 8, 16),  # alignment 8: 16 is the first candidate
    (set(), 3, 2, 0),  # p = 2 needs position 0
    ({0}, 3, 2, 2),
]


@pytest.mark.parametrize(("cached", "max_len", "alignment", "expected"), HIT_CASES)
def test_longest_hit(cached: set[int], max_len: int, alignment: int, expected: int) -> None:
    assert hit_len(lone_manager(make_group(CHUNKED, 2, chunk=4)), cached, max_len, alignment) == expected


@pytest.mark.parametrize(("num_computed", "skipped_blocks"), [(0, 0), (3, 0), (4, 2), (7, 2), (9, 4)])
def test_skipped_blocks(num_computed: int, skipped_blocks: int) -> None:
    """C = 4, block_size 2: skipped tokens = floor(n / 4) * 4."""
    assert lone_manager(make_group(CHUNKED, 2, chunk=4)).num_skipped_blocks(num_computed) == skipped_blocks


def test_lifecycle_block_ids() -> None:
    """Pool of 10 blocks (null + 9), C = 4, block_size 2, plain LRU (no protected blocks)."""
    kv = KVCacheManager(make_layout([make_group(CHUNKED, 2, chunk=4)], [10], max_model_len=32),
                        CacheConfig(eviction_policy=EvictionPolicy.LRU))
    pool = kv.pools[0]
    a = Request("a", list(range(9)), max_output_len=4)
    assert ids(kv.allocate_slots(a, 9)) == [[1, 2, 3, 4, 5]]
    a.num_computed_tokens = 9
    a.append_output_token(9)
    # 9 computed: skipped = 8 tokens = positions 0..3 -> blocks 4, 3, 2, 1 released tail first.
    assert ids(kv.allocate_slots(a, 1)) == [[]]
    assert kv.block_ids(a) == [[NULL_BLOCK_ID] * 4 + [5]]
    assert free_block_ids(pool) == [6, 7, 8, 9, 4, 3, 2, 1]
    kv.check_integrity()
    # Another prompt entirely: p = 10 needs position 4 (not cached) -> 8 is a chunk boundary,
    # a hit with no block at all (chunked layers never look before their chunk).
    b = Request("b", [70 + i for i in range(11)], max_output_len=4)
    hit = kv.get_computed_blocks(b)
    assert hit.num_tokens == 8 and hit.block_ids == ([NULL_BLOCK_ID] * 4,)
    assert kv.can_admit(b, hit)  # cdiv(min(C + T, 11), 2) = 6 blocks <= 8 free
    assert ids(kv.allocate_slots(b, 3, 8, hit)) == [[6, 7]]
    kv.check_integrity()
