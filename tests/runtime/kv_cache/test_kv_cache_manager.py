"""KVCacheManager facade: all-or-nothing allocation, gate, lookahead, caps, views, counters."""

from __future__ import annotations

import pytest
from hkv.runtime import (
    CacheConfig,
    CacheTiming,
    DuplicateBlocks,
    EvictionPolicy,
    FreeOrder,
    KVCacheManager,
    Request,
    SlidingRetention,
)
from rt_layouts import FULL, RECURRENT, SLIDING, ids, make_group, make_layout, slot_mapping
from rt_pool import free_block_ids


def snapshot(kv: KVCacheManager) -> list[object]:
    return [(free_block_ids(p), list(p.ref_cnt), list(p.block_hash)) for p in kv.pools.values()]


def test_allocation_that_does_not_fit_changes_nothing() -> None:
    """Two pools: full (block 2) in pool 0 with room, sliding (block 2, W = 2) in pool 1 with 3
    usable blocks. A 10-token prompt needs 5 sliding blocks: None, and pool 0 is untouched."""
    groups = [make_group(FULL, 2, pool_id=0), make_group(SLIDING, 2, window=2, pool_id=1)]
    kv = KVCacheManager(make_layout(groups, [20, 4], max_model_len=32))
    before = snapshot(kv)
    request = Request("r", list(range(10)), 1)
    assert kv.allocate_slots(request, 10) is None
    assert snapshot(kv) == before and kv.block_ids(request) == ()
    assert ids(kv.allocate_slots(request, 6)) == [[1, 2, 3], [1, 2, 3]]  # a smaller chunk fits
    kv.check_integrity()


def test_gate_is_per_pool_and_uses_the_layout_bound() -> None:
    """Full block 4 in pool 0 (6 usable), recurrent in pool 1 (1 usable, 1 state block each)."""
    groups = [make_group(FULL, 4, pool_id=0), make_group(RECURRENT, 4, pool_id=1)]
    kv = KVCacheManager(make_layout(groups, [7, 2], max_model_len=32))
    first, second = Request("a", list(range(12)), 1), Request("b", list(range(50, 54)), 1)
    assert kv.can_admit(first)  # 3 full blocks + 1 state block
    kv.allocate_slots(first, 12)
    assert not kv.can_admit(second)  # pool 0 has 3 free, but pool 1 has no state block left
    kv.free(first)
    assert kv.can_admit(Request("c", list(range(24)), 1))  # 6 full blocks: exactly the pool
    assert not kv.can_admit(Request("d", list(range(25)), 1))  # 7 > 6


def test_lookahead_slots_are_allocated_but_never_cached() -> None:
    kv = KVCacheManager(make_layout([make_group(FULL, 2)], [10], max_model_len=32))
    request = Request("r", list(range(4)), 4)
    assert ids(kv.allocate_slots(request, 4, num_lookahead_tokens=3)) == [[1, 2, 3, 4]]  # cdiv(7, 2)
    request.num_computed_tokens = 4
    kv.free(request)
    assert sum(h is not None for h in kv.pools[0].block_hash) == 2  # tokens 0..3 only


def test_slots_are_capped_at_max_model_len() -> None:
    kv = KVCacheManager(make_layout([make_group(FULL, 4)], [10], max_model_len=8))
    request = Request("r", list(range(8)), 1)
    assert ids(kv.allocate_slots(request, 8, num_lookahead_tokens=8)) == [[1, 2]]


def test_block_ids_view() -> None:
    groups = [make_group(FULL, 4), make_group(RECURRENT, 4)]
    kv = KVCacheManager(make_layout(groups, [10], max_model_len=32))
    request = Request("r", list(range(6)), 1)
    assert kv.block_ids(request) == ()  # holds nothing yet
    kv.allocate_slots(request, 6)  # full [1, 2], recurrent [null, 3]
    assert ids(kv.block_ids(request)) == [[1, 2], [0, 3]]
    assert slot_mapping(kv, request, 0, range(3, 6)) == [1 * 4 + 3, 2 * 4 + 0, 2 * 4 + 1]
    kv.free(request)
    assert kv.block_ids(request) == ()


def test_caching_off_means_no_hits_and_no_hashes() -> None:
    kv = KVCacheManager(make_layout([make_group(FULL, 2)], [10], max_model_len=32),
                        CacheConfig(enable_caching=False))
    a = Request("a", list(range(8)), 1)
    kv.allocate_slots(a, 8)
    a.num_computed_tokens = 8
    kv.free(a)
    assert kv.get_computed_blocks(Request("b", list(range(9)), 1)).num_tokens == 0
    assert a.block_hashes == [] and all(h is None for h in kv.pools[0].block_hash)


def test_counters() -> None:
    kv = KVCacheManager(make_layout([make_group(FULL, 2), make_group(SLIDING, 2, window=3)], [30],
                                    max_model_len=32), CacheConfig(sliding_retention=SlidingRetention.ALL))
    a = Request("a", list(range(8)), 4)
    kv.allocate_slots(a, 8)
    a.num_computed_tokens = 8
    a.append_output_token(1)
    kv.allocate_slots(a, 1)  # sliding: 8 computed -> skipped 6 tokens -> 3 blocks released
    b = Request("b", list(range(8)) + [5], 1)
    hit = kv.get_computed_blocks(b)  # p = 8 needs full 0..3 and sliding position 3
    kv.allocate_slots(b, 1, hit.num_tokens, hit)
    stats = kv.stats()
    assert (stats.num_query_tokens, stats.num_hit_tokens) == (8 + 9, 8) and stats.hit_rate == 8 / 17
    assert stats.num_early_released_blocks == (0, 3)
    # a: full 5 (9 tokens), sliding 2 (positions 3, 4); b shares full 0..3 and sliding 3, adds
    # one full and one sliding block for token 8.
    assert stats.num_blocks_in_use == (5 + 1, 2 + 1)
    assert stats.usage == pytest.approx(9 / 29)


def test_free_of_a_request_without_blocks_is_a_no_op() -> None:
    kv = KVCacheManager(make_layout([make_group(FULL, 2)], [4], max_model_len=32))
    kv.free(Request("never", [1, 2, 3], 1))
    kv.check_integrity()


def test_integrity_catches_a_table_pointing_at_a_free_block() -> None:
    kv = KVCacheManager(make_layout([make_group(FULL, 2)], [6], max_model_len=32))
    request = Request("r", list(range(4)), 1)
    kv.allocate_slots(request, 4)
    kv.request_blocks(request).block_ids[0].append(5)  # a block the request never got
    with pytest.raises(AssertionError, match="block 5"):
        kv.check_integrity()


def test_allocation_releases_skipped_blocks_first() -> None:
    kv = KVCacheManager(make_layout([make_group(SLIDING, 2, window=2)], [10], max_model_len=32))
    request = Request("r", list(range(8)), 1)
    kv.allocate_slots(request, 8)
    request.num_computed_tokens = 8
    assert kv.allocate_slots(request, 0) is kv.no_new_blocks  # skipped = 7 tokens -> positions 0..2
    assert kv.block_ids(request) == [[0, 0, 0, 4]]
    kv.check_integrity()


def test_cache_timing_scheduled_lets_a_same_step_admission_hit() -> None:
    """vLLM caches the blocks a step fills when it schedules them; hkv's default waits until
    they are computed (the next allocate_slots), so a request admitted in between misses."""
    prompt = list(range(9))
    for timing, expected in ((CacheTiming.COMPUTED, 0), (CacheTiming.SCHEDULED, 8)):
        kv = KVCacheManager(make_layout([make_group(FULL, 2)], [20], max_model_len=32),
                            CacheConfig(cache_timing=timing))
        first = Request("a", prompt, 2)
        kv.allocate_slots(first, 9)
        second = Request("b", prompt + [99], 2)
        assert kv.get_computed_blocks(second).num_tokens == expected, timing
        kv.check_integrity()


def test_cache_timing_scheduled_caches_decode_blocks_without_draft_slots() -> None:
    kv = KVCacheManager(make_layout([make_group(FULL, 2)], [20], max_model_len=32),
                        CacheConfig(cache_timing=CacheTiming.SCHEDULED))
    request = Request("r", list(range(3)), 4)
    kv.allocate_slots(request, 3, num_lookahead_tokens=4)  # 1 full block of 3 tokens is cached
    assert sum(h is not None for h in kv.pools[0].block_hash) == 1
    request.num_computed_tokens = 3
    request.append_output_token(50)
    kv.allocate_slots(request, 1, num_lookahead_tokens=4)  # token 3 fills block 1
    assert sum(h is not None for h in kv.pools[0].block_hash) == 2
    request.num_computed_tokens = 4
    request.append_output_token(51)
    assert ids(kv.allocate_slots(request, 1)) == [[]]  # nothing new: the steady path
    assert sum(h is not None for h in kv.pools[0].block_hash) == 2
    kv.check_integrity()


def test_cache_timing_scheduled_is_refused_with_recurrent_groups() -> None:
    layout = make_layout([make_group(FULL, 4), make_group(RECURRENT, 4)], [10], max_model_len=32)
    with pytest.raises(ValueError, match="recurrent"):
        KVCacheManager(layout, CacheConfig(cache_timing=CacheTiming.SCHEDULED))
    KVCacheManager(layout, CacheConfig(enable_caching=False, cache_timing=CacheTiming.SCHEDULED))


@pytest.mark.parametrize("order", list(FreeOrder))
def test_lru_free_order(order: FreeOrder) -> None:
    """GROUP_BY_GROUP (vLLM 0.32's free): group 0 tail first, then group 1's. REQUEST_TAIL_FIRST
    (vLLM 0.33): every group's blocks in group order, reversed: group 1's tail first."""
    groups = [make_group(FULL, 2), make_group(FULL, 2)]
    kv = KVCacheManager(make_layout(groups, [10], max_model_len=32),
                        CacheConfig(eviction_policy=EvictionPolicy.LRU, free_order=order))
    request = Request("r", list(range(4)), 1)
    assert ids(kv.allocate_slots(request, 4)) == [[1, 2], [3, 4]]
    request.num_computed_tokens = 4
    kv.free(request)
    cached = [b for b in free_block_ids(kv.pools[0]) if kv.pools[0].block_hash[b] is not None]
    assert cached == ([2, 1, 4, 3] if order is FreeOrder.GROUP_BY_GROUP else [4, 3, 2, 1])
    kv.check_integrity()


def test_vllm_config() -> None:
    config = CacheConfig.vllm()
    assert (config.eviction_policy, config.sliding_retention, config.cache_timing, config.duplicate_blocks,
            config.free_order) == (EvictionPolicy.LRU, SlidingRetention.ALL, CacheTiming.SCHEDULED,
                                   DuplicateBlocks.KEEP, FreeOrder.GROUP_BY_GROUP)
