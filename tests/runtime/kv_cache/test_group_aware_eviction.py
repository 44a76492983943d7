"""Group-aware eviction against plain LRU: release order, protection of early releases."""

from __future__ import annotations

import pytest
from hkv.runtime import (
    CacheConfig,
    EvictionPolicy,
    KVCacheManager,
    Request,
    Scheduler,
    SchedulerConfig,
    SlidingRetention,
)
from hkv.runtime.kv_cache.request_blocks import RequestBlocks
from rt_layouts import FULL, RECURRENT, SLIDING, make_group, make_layout
from rt_pool import free_block_ids, is_cold, is_protected, is_reserved


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
    assert free_block_ids(kv.pools[0]) == [9, 10, 11] + expected_back


def finished_pair(policy: EvictionPolicy) -> tuple[KVCacheManager, Request, Request]:
    """Full (block 4) + recurrent (block 4, one state block), 15 usable blocks. Sessions a and b
    run side by side: an 8-token prefill each, then one decode step. The decode caches each
    checkpoint at 8 and releases it while the request keeps running; then both finish (8 tokens
    of full attention cached each).

        LRU:          queue = [uncached ..., ckpt_a, ckpt_b, a_full1, a_full0, b_full1, b_full0]
        group-aware:  queue = [uncached ..., ckpt_a, a_full1, a_full0, ckpt_b, b_full1, b_full0]
                      (each checkpoint, cold while its request ran, is warmed when it stops:
                      it is what the request's next turn hits)
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
    # LRU: evicting 2 cached blocks takes both checkpoints: both sessions lose their hit while
    # their full-attention blocks stay cached for nothing.
    (EvictionPolicy.LRU, (0, 0)),
    # Group-aware: a's prefix shrinks as a whole (full blocks, then its checkpoint); b keeps 8.
    (EvictionPolicy.GROUP_AWARE, (0, 8)),
])
def test_one_prefix_goes_as_a_whole(policy: EvictionPolicy, expected_hits: tuple[int, int]) -> None:
    kv, a, b = finished_pair(policy)
    pool = kv.pools[0]
    num_cached = sum(h is not None for h in pool.block_hash)
    assert num_cached == 6 and pool.num_protected_blocks == 0  # 2 checkpoints + 2 x 2 full blocks
    a_next, b_next = Request("a2", [*a.token_ids, 1], 1), Request("b2", [*b.token_ids, 1], 1)
    assert (kv.get_computed_blocks(a_next).num_tokens, kv.get_computed_blocks(b_next).num_tokens) == (8, 8)
    # An unrelated request takes every uncached block and 2 cached ones (1 state block and
    # num_uncached + 1 full blocks).
    num_uncached = pool.num_free_blocks - num_cached
    other = Request("x", list(range(300, 300 + 4 * (num_uncached + 1))), 1)
    assert kv.allocate_slots(other, other.num_tokens) is not None
    assert pool.num_evictions == 2
    kv.check_integrity()
    hits = (kv.get_computed_blocks(a_next).num_tokens, kv.get_computed_blocks(b_next).num_tokens)
    assert hits == expected_hits


def running_with_released_window(policy: EvictionPolicy) -> tuple[KVCacheManager, list[int], Request]:
    """Full (block 2) + sliding (W = 3, block 2), dense retention, 20 blocks. Request a (10
    tokens) runs one decode step: it releases sliding positions 0..2 (cached) but keeps running
    and holds its full blocks."""
    groups = [make_group(FULL, 2), make_group(SLIDING, 2, window=3)]
    kv = KVCacheManager(make_layout(groups, [20], max_model_len=32),
                        CacheConfig(eviction_policy=policy, sliding_retention=SlidingRetention.ALL))
    a = Request("a", list(range(10)), 4)
    kv.allocate_slots(a, 10)  # full 1..5, sliding 6..10
    # As if a stood on a branch point (test_branch_point_rule checks when a request does).
    kv.request_blocks(a).protects_early_releases = True
    a.num_computed_tokens = 10
    a.append_output_token(1)
    kv.allocate_slots(a, 1)  # 10 computed: sliding positions 0..3 released (blocks 6..9)
    kv.check_integrity()
    return kv, [9, 8, 7, 6], a


def test_early_releases_of_a_running_request_are_protected() -> None:
    kv, released, _ = running_with_released_window(EvictionPolicy.GROUP_AWARE)
    pool = kv.pools[0]
    assert all(is_protected(pool, b) for b in released)
    assert kv.stats().num_protected_blocks == (4,)
    # a holds full 1..5 + 11 and sliding 10 + 12: 19 usable - 8 held = 11 free, 4 of them
    # protected. A hit on the protected window is allowed: the shared 8 tokens need sliding
    # position 3 (block 9): full 5 - 4 shared + sliding 6 - 1 protected hit = 6 <= 7.
    follow = Request("follow", list(range(8)) + [70, 71], 1)
    hit = kv.get_computed_blocks(follow)
    assert hit.num_tokens == 8 and hit.block_ids[1][3] == 9
    assert kv.can_admit(follow, hit)
    # A 16-token request needs 8 full + cdiv(min(2 + 8, 16), 2) + 1 = 6 sliding blocks: refused;
    # a 6-token one (3 + 4 blocks) fits in the 7 unprotected blocks without touching a's window.
    assert not kv.can_admit(Request("big", list(range(50, 66)), 1))
    small = Request("small", list(range(50, 56)), 1)
    assert kv.can_admit(small)
    kv.allocate_slots(small, 6)
    assert all(is_protected(pool, b) for b in released)
    kv.check_integrity()


def test_protected_blocks_become_ordinary_when_the_request_stops() -> None:
    kv, released, request = running_with_released_window(EvictionPolicy.GROUP_AWARE)
    kv.free(request)
    pool = kv.pools[0]
    assert pool.num_protected_blocks == 0
    # a's held blocks by descending position (full 5 and sliding 10 at position 4 were not fully
    # computed: uncached, front), then its early releases, oldest release first.
    assert free_block_ids(pool)[-8:] == [4, 3, 2, 1] + released
    kv.check_integrity()


def run_prefill(kv: KVCacheManager, request: Request) -> None:
    """Admit `request` with its prefix hit and compute its whole prompt."""
    hit = kv.get_computed_blocks(request)
    assert kv.allocate_slots(request, request.num_tokens - hit.num_tokens, hit.num_tokens, hit) is not None
    request.num_computed_tokens = request.num_tokens


def test_branch_point_rule() -> None:
    """Full (block 2) + sliding (W = 3, block 2), dense retention, 40 blocks. A seed request
    caches tokens 0..9. x and y both hit its first 8 tokens and diverge: y is the second request
    whose hit ends at 8, so it stands on a branch point and protects what it releases early; x
    (the first) does not. z, x's next turn, hits x's whole 14-token history: a point nobody else
    ended at, so it does not protect either; its early releases are cold."""
    groups = [make_group(FULL, 2), make_group(SLIDING, 2, window=3)]
    kv = KVCacheManager(make_layout(groups, [40], max_model_len=64),
                        CacheConfig(eviction_policy=EvictionPolicy.GROUP_AWARE,
                                    sliding_retention=SlidingRetention.ALL))
    seed = Request("seed", list(range(10)), 1)
    run_prefill(kv, seed)
    kv.free(seed)
    x = Request("x", list(range(8)) + [60, 61, 62, 63, 64, 65], 2)
    y = Request("y", list(range(8)) + [70, 71, 72, 73, 74, 75], 2)
    for request in (x, y):
        run_prefill(kv, request)
        assert kv.request_blocks(request).closed_hit_len == 8
    xb, yb = kv.request_blocks(x), kv.request_blocks(y)
    assert (xb.protects_early_releases, yb.protects_early_releases) == (False, True)
    pool = kv.pools[0]
    # Sliding positions 4, 5 (tokens 8..11) are each request's own; position 3 is the seed's
    # block, in both hits.
    x_own, y_own, shared = xb.block_ids[1][4:6], yb.block_ids[1][4:6], xb.block_ids[1][3]
    assert yb.block_ids[1][3] == shared
    for request in (x, y):
        request.append_output_token(1)
        kv.allocate_slots(request, 1)  # 14 computed: sliding positions 0..5 released
    assert [(is_cold(pool, b), is_protected(pool, b)) for b in x_own] == [(True, False)] * 2
    assert xb.protected_block_ids[1] == []
    # y released the shared block last (x's release left it in use): protected with y's own.
    assert sorted(yb.protected_block_ids[1]) == sorted([*y_own, shared])
    assert all(is_protected(pool, b) for b in yb.protected_block_ids[1])
    kv.check_integrity()
    x.num_computed_tokens += 1
    kv.free(x)
    z = Request("z", [*x.token_ids, 80, 81, 82], 1)
    run_prefill(kv, z)
    zb = kv.request_blocks(z)
    assert zb.closed_hit_len == 14 and not zb.protects_early_releases
    kv.check_integrity()


def test_stop_leaves_blocks_protected_since_by_another_request() -> None:
    """A block one request protected, evicted, reallocated and protected again by a second
    request stays protected when the first request stops (a stale id of its owner list)."""
    kv = KVCacheManager(make_layout([make_group(FULL, 2)], [3], max_model_len=32),
                        CacheConfig(eviction_policy=EvictionPolicy.GROUP_AWARE))
    pool, policy = kv.pools[0], kv.eviction
    first, second = (RequestBlocks(Request(name, [1], 1), 1) for name in ("first", "second"))
    first.protects_early_releases = second.protects_early_releases = True
    a, b = pool.allocate(2, 0)
    pool.cache_block(a, b"h1" * 8, 0)
    policy.release_early(first, pool, 0, [a])
    assert first.protected_block_ids == [[a]] and is_protected(pool, a)
    assert pool.allocate(1, 0) == [a]  # the only free block: evicted although protected
    pool.cache_block(a, b"h2" * 8, 0)
    policy.release_early(second, pool, 0, [a])
    policy.free_request(first)  # holds no block: only its protections end
    assert is_protected(pool, a)
    policy.free_request(second)
    assert not is_protected(pool, a)
    pool.check_integrity([(b, 0)])


def test_lru_does_not_protect() -> None:
    kv, released, _ = running_with_released_window(EvictionPolicy.LRU)
    assert not any(is_protected(kv.pools[0], b) for b in released)


def test_stop_warms_the_cold_block_its_final_hit_needs() -> None:
    """Full (block 4) + sliding (W = 3, block 2): hits align to 4 tokens. A 10-token prompt
    caches its resend window (hit at 8 needs sliding position 3, tokens 6..7). One decode step
    (10 computed) releases sliding positions 0..3 early: position 3 is cached and, with no
    shared hit point, goes cold. The request stops at 11 computed tokens: its final hit is at 8,
    which needs that cold block, so the stop moves it to the main segment first, ahead of the
    request's held blocks."""
    groups = [make_group(FULL, 4), make_group(SLIDING, 2, window=3)]
    kv = KVCacheManager(make_layout(groups, [24], max_model_len=32),
                        CacheConfig(eviction_policy=EvictionPolicy.GROUP_AWARE))
    a = Request("a", list(range(10)), 2)
    run_prefill(kv, a)
    pos3 = kv.block_ids(a)[1][3]
    a.append_output_token(1)
    kv.allocate_slots(a, 1)
    pool = kv.pools[0]
    assert kv.block_ids(a)[1][3] == 0 and is_cold(pool, pos3)
    a.num_computed_tokens += 1
    held_full = [b for b in kv.block_ids(a)[0] if pool.block_hash[b] is not None]
    kv.free(a)
    queue = free_block_ids(pool)
    assert not is_cold(pool, pos3) and pos3 in queue
    assert queue.index(pos3) < min(queue.index(b) for b in held_full)
    kv.check_integrity()
    again = Request("again", [*range(10), 1, 5], 1)
    assert kv.get_computed_blocks(again).num_tokens == 8


def reservation_setup(policy: EvictionPolicy, limit: int = 8) -> tuple[KVCacheManager, dict[str, Request]]:
    """Full attention only (block 2), 20 blocks. Seeds a (tokens 0..5), b (10..15), c (20..25)
    each ran and stopped: blocks 1..3, 4..6, 7..9 cached, queue = front [10..19] | main
    [3 2 1 6 5 4 9 8 7] (each tail first). A, B, C are their next turns (6-token hits on those
    blocks); D shares a's first 2 blocks (4-token hit on blocks 1, 2)."""
    kv = KVCacheManager(make_layout([make_group(FULL, 2)], [20], max_model_len=32),
                        CacheConfig(eviction_policy=policy, reserved_waiting_requests=limit))
    for i, base in enumerate((0, 10, 20)):
        seed = Request(f"seed{i}", list(range(base, base + 6)), 1)
        run_prefill(kv, seed)
        kv.free(seed)
    waiting = {name: Request(name, [*range(base, base + 6), 30 + i], 1)
               for i, (name, base) in enumerate((("A", 0), ("B", 10), ("C", 20)))}
    waiting["D"] = Request("D", [0, 1, 2, 3, 40, 41, 42], 1)
    assert free_block_ids(kv.pools[0])[-9:] == [3, 2, 1, 6, 5, 4, 9, 8, 7]
    return kv, waiting


@pytest.mark.parametrize(("policy", "limit", "queue_order", "expected_main", "expected_reserved"), [
    # Hits of requests further back are evicted first, the head's last; each tail first.
    (EvictionPolicy.GROUP_AWARE, 8, "ABC", [], [9, 8, 7, 6, 5, 4, 3, 2, 1]),
    (EvictionPolicy.GROUP_AWARE, 8, "CAB", [], [6, 5, 4, 3, 2, 1, 9, 8, 7]),
    # Only the first 2 waiting requests: C's hit stays in the main segment.
    (EvictionPolicy.GROUP_AWARE, 2, "ABC", [9, 8, 7], [6, 5, 4, 3, 2, 1]),
    # D (head) owns the blocks it shares with A (last): A keeps only block 3.
    (EvictionPolicy.GROUP_AWARE, 8, "DBA", [9, 8, 7], [3, 6, 5, 4, 2, 1]),
    # Plain LRU reserves nothing.
    (EvictionPolicy.LRU, 8, "ABC", [3, 2, 1, 6, 5, 4, 9, 8, 7], []),
])
def test_reservation_order(policy: EvictionPolicy, limit: int, queue_order: str, expected_main: list[int],
                           expected_reserved: list[int]) -> None:
    kv, waiting = reservation_setup(policy, limit)
    kv.reserve_waiting_hits([waiting[name] for name in queue_order])
    pool = kv.pools[0]
    cached = expected_main + expected_reserved
    assert free_block_ids(pool)[-len(cached):] == cached
    assert pool.num_reserved_blocks == len(expected_reserved)
    assert all(is_reserved(pool, b) for b in expected_reserved)
    kv.check_integrity()


def test_reservation_counts_as_free_and_is_evicted_back_first() -> None:
    kv, waiting = reservation_setup(EvictionPolicy.GROUP_AWARE)
    a, b, c = waiting["A"], waiting["B"], waiting["C"]
    kv.reserve_waiting_hits([a, b, c])
    # 10 uncached + 9 reserved blocks are free: a 26-token request (13 blocks) is admitted and
    # evicts C's hit (first in the reserved segment), not A's or B's.
    big = Request("big", list(range(100, 126)), 1)
    assert kv.can_admit(big, kv.get_computed_blocks(big))
    assert kv.allocate_slots(big, 26) is not None
    assert [kv.get_computed_blocks(r).num_tokens for r in (a, b, c)] == [6, 6, 0]
    kv.reserve_waiting_hits([c, b])  # a new order (a preemption): reserved again from scratch,
    assert free_block_ids(kv.pools[0]) == [3, 2, 1, 6, 5, 4]  # A's blocks go to the back of main
    kv.drop_reservation()
    assert kv.pools[0].num_reserved_blocks == 0 and free_block_ids(kv.pools[0]) == [3, 2, 1, 6, 5, 4]
    kv.check_integrity()


@pytest.mark.parametrize(("windows", "expected_main", "expected_reserved"), [
    # Requests joining the back are reserved ahead of the others: same order as from scratch.
    (["AB", "ABC"], [], [9, 8, 7, 6, 5, 4, 3, 2, 1]),
    (["A", "AB", "ABC"], [], [9, 8, 7, 6, 5, 4, 3, 2, 1]),
    # D joins behind A and B: its hit, blocks 1 and 2, is reserved for A already.
    (["AB", "ABD"], [9, 8, 7], [6, 5, 4, 3, 2, 1]),
    # The head left (admitted elsewhere in a real run): its blocks stay where they are.
    (["AB", "B", "BC"], [], [9, 8, 7, 6, 5, 4, 3, 2, 1]),
])
def test_incremental_reservation_matches_the_queue_order(windows: list[str], expected_main: list[int],
                                                         expected_reserved: list[int]) -> None:
    kv, waiting = reservation_setup(EvictionPolicy.GROUP_AWARE)
    for window in windows:
        kv.reserve_waiting_hits([waiting[name] for name in window])
    pool = kv.pools[0]
    cached = expected_main + expected_reserved
    assert free_block_ids(pool)[-len(cached):] == cached
    assert pool.num_reserved_blocks == len(expected_reserved)
    kv.check_integrity()
