"""Group-aware eviction against plain LRU: release order and the cascade of dead prefixes."""

from __future__ import annotations

import pytest
from rt_layouts import FULL, RECURRENT, SLIDING, make_group, make_layout

from hkv.runtime import (
    CacheConfig, EvictionPolicy, KVCacheManager, Request, Scheduler, SchedulerConfig, SlidingRetention,
)


@pytest.mark.parametrize(("policy", "expected_back"), [
    # full g0 got blocks 1..4, sliding g1 got 5..8 (positions 0..3).
    (EvictionPolicy.LRU, [8, 7, 6, 5, 4, 3, 2, 1]),  # group after group, each tail first
    (EvictionPolicy.GROUP_AWARE, [8, 4, 7, 3, 6, 2, 5, 1]),  # by position across groups
])
def test_release_order(policy: EvictionPolicy, expected_back: list[int]) -> None:
    groups = [make_group(FULL, 2), make_group(SLIDING, 2, window=8)]
    kv = KVCacheManager(make_layout(groups, [12], max_model_len=32),
                        CacheConfig(eviction_policy=policy, sliding_retention=SlidingRetention.ALL))
    request = Request("a", list(range(8)), 1)
    kv.allocate_slots(request, 8)
    request.num_computed_tokens = 8
    kv.free(request)
    assert list(kv.pools[0]._queue) == [9, 10, 11] + expected_back


def finished_pair(policy: EvictionPolicy) -> tuple[KVCacheManager, Request, Request]:
    """Full (block 4) + recurrent (block 4, one state block), 15 usable blocks. Sessions a and b
    run side by side: an 8-token prefill each, then one decode step. The decode caches each
    checkpoint at 8 and releases it mid-run (a's, then b's, LRU back); at the end each request
    frees its full blocks (8 tokens cached) after them:
        queue = [uncached ..., ckpt_a, ckpt_b, a_full1, a_full0, b_full1, b_full0]
    """
    layout = make_layout([make_group(FULL, 4), make_group(RECURRENT, 4, num_state_blocks=1)], [16],
                         max_model_len=64, in_flight_tokens=16)
    kv = KVCacheManager(layout, CacheConfig(eviction_policy=policy))
    scheduler = Scheduler(kv, SchedulerConfig(max_num_batched_tokens=16, max_num_seqs=2))
    a, b = Request("a", list(range(100, 108)), 2), Request("b", list(range(200, 208)), 2)
    scheduler.add_request(a)
    scheduler.add_request(b)
    while scheduler.has_unfinished_requests:
        output = scheduler.schedule()
        scheduler.update_from_output(output, {e.request_id: 7 for e in output.scheduled if e.emits_token})
        kv.check_integrity()
    return kv, a, b


@pytest.mark.parametrize(("policy", "expected_hits"), [
    # LRU: evicting 2 cached blocks takes both checkpoints: both sessions lose their hit.
    (EvictionPolicy.LRU, (0, 0)),
    # Group-aware: ckpt_a's eviction kills a's only hit, so a's full blocks are demoted and go
    # next; b keeps its hit of 8.
    (EvictionPolicy.GROUP_AWARE, (0, 8)),
])
def test_dead_prefix_goes_before_a_live_one(policy: EvictionPolicy, expected_hits: tuple[int, int]) -> None:
    kv, a, b = finished_pair(policy)
    pool = kv.pools[0]
    num_cached = sum(h is not None for h in pool.block_hash)
    assert num_cached == 6  # 2 checkpoints + 2 x 2 full blocks
    a_next, b_next = Request("a2", a.token_ids + [1], 1), Request("b2", b.token_ids + [1], 1)
    assert (kv.get_computed_blocks(a_next).num_tokens, kv.get_computed_blocks(b_next).num_tokens) == (8, 8)
    # An unrelated request takes every uncached block and 2 cached ones: 1 state block and
    # 4 * num_full_blocks tokens.
    num_uncached = pool.num_free_blocks - num_cached
    other = Request("x", list(range(300, 300 + 4 * (num_uncached + 1))), 1)
    assert kv.allocate_slots(other, other.num_tokens) is not None
    assert pool.num_evictions == 2
    kv.check_integrity()
    hits = (kv.get_computed_blocks(a_next).num_tokens, kv.get_computed_blocks(b_next).num_tokens)
    assert hits == expected_hits
    assert kv.stats().num_demoted_blocks == (2 if policy is EvictionPolicy.GROUP_AWARE else 0)


def test_full_attention_only_layout_installs_no_cascade() -> None:
    kv = KVCacheManager(make_layout([make_group(FULL, 2)], [6]), CacheConfig())
    assert kv.pools[0]._evict_listener is None


def test_sliding_tail_eviction_demotes_the_full_prefix() -> None:
    """Full (block 2) + sliding (W = 3, block 2). A 10-token prompt computed then freed (no
    decode step, so nothing was released early). Evicting the sliding tail at position 4 kills
    the hit at 10; the hit at 8 still has sliding position 3 ... until it is evicted too."""
    groups = [make_group(FULL, 2), make_group(SLIDING, 2, window=3)]
    kv = KVCacheManager(make_layout(groups, [12], max_model_len=32),
                        CacheConfig(eviction_policy=EvictionPolicy.GROUP_AWARE,
                                    sliding_retention=SlidingRetention.ALL))
    a = Request("a", list(range(10)), 1)
    kv.allocate_slots(a, 10)  # full 1..5, sliding 6..10
    a.num_computed_tokens = 10
    kv.free(a)
    pool = kv.pools[0]
    assert list(pool._queue) == [11, 10, 5, 9, 4, 8, 3, 7, 2, 6, 1]
    follow_up = Request("a2", list(range(10)) + [1], 1)
    assert kv.get_computed_blocks(follow_up).num_tokens == 10
    pool.allocate(2, 0)  # takes 11, then evicts sliding position 4 (block 10)
    # Longest hit now 8 (sliding position 3 = block 9): full position 4 (block 5) is useless and
    # was moved to the front.
    assert kv.get_computed_blocks(follow_up).num_tokens == 8
    assert list(pool._queue)[0] == 5 and kv.stats().num_demoted_blocks == 1
