"""SlidingWindowManager: right-to-left hits, early release, exact block ids."""

from __future__ import annotations

import pytest
from hkv.runtime import NULL_BLOCK_ID, CacheConfig, EvictionPolicy, KVCacheManager, Request, SlidingRetention
from rt_layouts import FULL, SLIDING, hash_tokens, hit_len, ids, lone_manager, make_group, make_layout
from rt_pool import cached_block, free_block_ids, is_cold, is_protected

# W = 5, block_size 2: a hit of p needs tokens [p - 4, p), i.e. positions [(p - 4) // 2, p // 2).
HIT_CASES = [
    # (cached positions, max_len, alignment, expected hit)
    (set(range(10)), 20, 2, 20),  # p = 20 needs positions 8, 9
    ({8, 9}, 20, 2, 20),  # only the window matters
    ({9}, 20, 2, 0),  # 8 missing; every shorter candidate misses too
    ({2, 3, 4}, 20, 2, 10),  # 20..12 miss; p = 10 needs 3, 4
    ({2, 3, 4}, 20, 4, 8),  # alignment 4: p = 8 needs 2, 3
    ({0, 1}, 20, 2, 4),  # p = 4 needs positions 0, 1 (window reaches the start)
    ({0}, 20, 2, 2),  # p = 2 needs position 0
    ({5, 6, 8, 9}, 19, 2, 14),  # max_len 19 -> p = 18 needs 7, 8: 7 missing -> 14 needs 5, 6
]


@pytest.mark.parametrize(("cached", "max_len", "alignment", "expected"), HIT_CASES)
def test_longest_hit(cached: set[int], max_len: int, alignment: int, expected: int) -> None:
    assert hit_len(lone_manager(make_group(SLIDING, 2, window=5)), cached, max_len, alignment) == expected


@pytest.mark.parametrize(("num_computed", "skipped_blocks"),
                         [(0, 0), (3, 0), (4, 0), (5, 1), (6, 1), (7, 2), (11, 4)])
def test_skipped_blocks(num_computed: int, skipped_blocks: int) -> None:
    """W = 4, block_size 2: skipped tokens = max(0, n - 3), whole blocks only."""
    assert lone_manager(make_group(SLIDING, 2, window=4)).num_skipped_blocks(num_computed) == skipped_blocks


@pytest.mark.parametrize("policy", list(EvictionPolicy))
def test_lifecycle_block_ids(policy: EvictionPolicy) -> None:
    """Pool of 10 blocks (null + 9), W = 4, block_size 2, in-flight allowance 8; every full
    block cached (SlidingRetention.ALL)."""
    kv = KVCacheManager(make_layout([make_group(SLIDING, 2, window=4)], [10], max_model_len=32),
                        CacheConfig(sliding_retention=SlidingRetention.ALL, eviction_policy=policy))
    pool = kv.pools[0]
    a = Request("a", list(range(9)), max_output_len=4)
    assert ids(kv.allocate_slots(a, 9)) == [[1, 2, 3, 4, 5]]  # prefill writes all 9 tokens
    a.num_computed_tokens = 9
    a.append_output_token(9)
    # Decode: cache blocks 1..4 (8 tokens computed), then release what 9 computed tokens no
    # longer need: skipped = 9 - 3 = 6 tokens = positions 0..2 -> blocks 3, 2, 1 (tail first).
    assert ids(kv.allocate_slots(a, 1)) == [[]]
    assert kv.block_ids(a) == [[NULL_BLOCK_ID, NULL_BLOCK_ID, NULL_BLOCK_ID, 4, 5]]
    assert free_block_ids(pool) == [6, 7, 8, 9, 3, 2, 1]
    assert kv.stats().num_early_released_blocks == (3,)
    kv.check_integrity()

    # b shares a's first 10 tokens. max_len 10: p = 10 needs positions 3, 4 but block 5 (tokens
    # 8, 9) is not computed yet -> p = 8 needs positions 2, 3: block 3 (cached-free) and block 4
    # (in use by a).
    b = Request("b", list(range(10)) + [77], max_output_len=4)
    hit = kv.get_computed_blocks(b)
    assert hit.num_tokens == 8 and hit.block_ids == ([NULL_BLOCK_ID, NULL_BLOCK_ID, 3, 4],)
    # Gate: cdiv(min(W - 1 + T, 11), 2) + 1 = 7 blocks, less block 4 already in use = 6 <= 7 free.
    # Group-aware: a's hit point was no other request's (it had none), so what it released early
    # is cold (evicted first, counted as free), not protected: the queue order is the same.
    if policy is EvictionPolicy.GROUP_AWARE:
        assert [(is_cold(pool, x), is_protected(pool, x)) for x in (3, 2, 1)] == [(True, False)] * 3
    assert kv.can_admit(b, hit)
    assert ids(kv.allocate_slots(b, 3, 8, hit)) == [[6, 7]]  # 11 tokens -> positions 4, 5
    assert pool.ref_cnt[4] == 2 and pool.ref_cnt[3] == 1
    kv.check_integrity()
    kv.free(a)
    kv.free(b)
    kv.check_integrity()
    assert kv.usage == 0.0


def test_gate_counts_the_window_not_the_prompt() -> None:
    """A 30-token prompt with W = 4, block_size 2, T = 8 needs cdiv(11, 2) + 1 = 7 blocks, not 15."""
    kv = KVCacheManager(make_layout([make_group(SLIDING, 2, window=4)], [8], max_model_len=32,
                                    in_flight_tokens=8))
    assert kv.can_admit(Request("long", list(range(30)), 1))
    kv_small = KVCacheManager(make_layout([make_group(SLIDING, 2, window=4)], [7], max_model_len=32,
                                          in_flight_tokens=8))
    assert not kv_small.can_admit(Request("long", list(range(30)), 1))


def test_hit_points_cache_only_windows_before_expected_hits() -> None:
    """Full (block 2) + sliding (W = 3, block 2), SlidingRetention.HIT_POINTS (the default).
    A hit of p needs sliding position (p - 2) // 2."""
    kv = KVCacheManager(make_layout([make_group(FULL, 2), make_group(SLIDING, 2, window=3)], [40],
                                    max_model_len=32))

    def run(request: Request) -> int:
        hit = kv.get_computed_blocks(request)
        kv.allocate_slots(request, request.num_tokens - hit.num_tokens, hit.num_tokens, hit)
        request.num_computed_tokens = request.num_tokens
        kv.free(request)
        kv.check_integrity()
        return hit.num_tokens

    def cached_sliding_positions(tokens: list[int]) -> set[int]:
        hashes = hash_tokens(kv.hasher, tokens)
        return {i for i, h in enumerate(hashes) if cached_block(kv.pools[0], h, 1) is not None}

    shared = list(range(8))
    a = shared + [20, 21, 22, 23]  # 12 tokens
    assert run(Request("a", a, 1)) == 0
    # Only a's resend point 10 (position 4) and its final length 12 (position 5) are kept.
    assert cached_sliding_positions(a) == {4, 5}
    b = shared + [30, 31, 32]
    # Full attention hits 8 but sliding position 3 is missing: no hit; 8 becomes a junction, so
    # b keeps position 3 (and its own resend/final windows).
    assert run(Request("b", b, 1)) == 0
    assert cached_sliding_positions(b) == {3, 4}
    assert run(Request("c", shared + [40, 41], 1)) == 8
