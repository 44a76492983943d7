"""FullAttentionManager: left-to-right hits, nothing released early, exact block ids."""

from __future__ import annotations

import pytest
from hkv.runtime import CacheConfig, EvictionPolicy, KVCacheManager, Request
from rt_layouts import FULL, hit_len, ids, lone_manager, make_group, make_layout, slot_mapping
from rt_pool import free_block_ids

# block_size 2: position i holds tokens [2i, 2i + 2).
HIT_CASES = [
    # (cached positions, max_len, alignment, expected hit)
    (set(), 20, 2, 0),
    ({0, 1, 2, 3}, 20, 2, 8),  # run 0..3
    ({0, 1, 2, 4, 5}, 20, 2, 6),  # stops at the first miss (3) even though 4, 5 are cached
    ({0, 1, 2, 4}, 20, 4, 4),  # 6 rounded down to the alignment 4
    ({0, 1, 2, 3, 4, 5}, 9, 2, 8),  # max_len 9: only 4 whole blocks may count
    ({1, 2, 3}, 20, 2, 0),  # block 0 missing: nothing
]


@pytest.mark.parametrize(("cached", "max_len", "alignment", "expected"), HIT_CASES)
def test_longest_hit(cached: set[int], max_len: int, alignment: int, expected: int) -> None:
    assert hit_len(lone_manager(make_group(FULL, 2)), cached, max_len, alignment) == expected


@pytest.mark.parametrize("policy", list(EvictionPolicy))
def test_lifecycle_block_ids(policy: EvictionPolicy) -> None:
    """Pool of 8 blocks (null + 7), block_size 4, one full group."""
    kv = KVCacheManager(make_layout([make_group(FULL, 4)], [8], max_model_len=32),
                        CacheConfig(eviction_policy=policy))
    a = Request("a", list(range(10)), max_output_len=4)
    assert kv.get_computed_blocks(a).num_tokens == 0
    assert ids(kv.allocate_slots(a, 10)) == [[1, 2, 3]]  # cdiv(10, 4) = 3 blocks
    a.num_computed_tokens = 10
    a.append_output_token(50)  # 11 tokens: still fits in block 3
    assert ids(kv.allocate_slots(a, 1)) == [[]]
    a.num_computed_tokens = 11
    kv.free(a)  # caches blocks 1, 2 (tokens 0..7 computed); 3 is partial
    pool = kv.pools[0]
    # Tail first: 3 (uncached) to the front, then 2 and 1 to the back.
    assert free_block_ids(pool) == [3, 4, 5, 6, 7, 2, 1]
    kv.check_integrity()

    b = Request("b", list(range(8)) + [90, 91, 92], max_output_len=4)
    hit = kv.get_computed_blocks(b)  # max_len 10 -> 2 cached blocks -> 8 tokens
    assert hit.num_tokens == 8 and hit.block_ids == ([1, 2],)
    assert kv.can_admit(b, hit)
    assert ids(kv.allocate_slots(b, 3, hit.num_tokens, hit)) == [[3]]  # 11 tokens: one new block
    assert kv.block_ids(b) == [[1, 2, 3]]
    assert slot_mapping(kv, b, 0, range(8, 11)) == [12, 13, 14]  # block 3 * 4 + offsets 0..2
    kv.check_integrity()
    stats = kv.stats()
    assert (stats.num_query_tokens, stats.num_hit_tokens) == (10 + 11, 8)
    assert stats.num_early_released_blocks == (0,) and stats.num_blocks_in_use == (3,)


def test_hit_never_covers_the_last_token() -> None:
    kv = KVCacheManager(make_layout([make_group(FULL, 2)], [10], max_model_len=32))
    a = Request("a", list(range(8)), max_output_len=1)
    kv.allocate_slots(a, 8)
    a.num_computed_tokens = 8
    kv.free(a)
    same = Request("same", list(range(8)), max_output_len=1)
    assert kv.get_computed_blocks(same).num_tokens == 6  # 8 - 1 = 7, rounded to blocks of 2
