"""KVCacheCoordinator: the hybrid fixed point, alignment, batching of identical groups."""

from __future__ import annotations

import pytest
from hkv.runtime import NULL_BLOCK_ID, KVCacheManager, Request
from rt_layouts import FULL, RECURRENT, SLIDING, make_group, make_layout, plant
from rt_pool import is_cached_free

N = NULL_BLOCK_ID
TOKENS = list(range(100, 116))  # 16 tokens; requests add one more so max_len = 16


def three_kinds() -> KVCacheManager:
    """g0 full (block 2), g1 sliding W = 3 (block 4), g2 recurrent (block 4): hash block 2,
    hits aligned to 4. A hit of p needs: g0 positions [0, p/2); g1 position (p - 2) // 4 (the
    last W - 1 = 2 tokens), g2 the checkpoint at position p/4 - 1."""
    groups = [make_group(FULL, 2), make_group(SLIDING, 4, window=3), make_group(RECURRENT, 4)]
    return KVCacheManager(make_layout(groups, [64], max_model_len=64))


ALL_FULL, ALL = set(range(8)), set(range(4))
CASES = [
    # (g0 full, g1 sliding, g2 recurrent cached positions, expected hit)
    (ALL_FULL, ALL, ALL, 16),
    (set(range(6)), ALL, ALL, 12),  # full stops at 12
    (ALL_FULL, {0, 1, 2}, ALL, 12),  # sliding lacks position 3 -> 16 fails
    (ALL_FULL, ALL, {1}, 8),  # only the checkpoint at 8
    # Rounds: sliding accepts 16; recurrent lowers to 12; sliding to 8; recurrent to 4;
    # sliding needs position 0 at 4 -> 0.
    (ALL_FULL, {1, 3}, {0, 2}, 0),
    # Same, but sliding has position 0: the last round accepts 4.
    (ALL_FULL, {0, 1, 3}, {0, 2}, 4),
    (set(), ALL, ALL, 0),
]


@pytest.mark.parametrize(("full", "sliding", "recurrent", "expected"), CASES)
def test_fixed_point(full: set[int], sliding: set[int], recurrent: set[int], expected: int) -> None:
    kv = three_kinds()
    planted = [plant(kv, TOKENS, gid, positions) for gid, positions in enumerate([full, sliding, recurrent])]
    hit = kv.get_computed_blocks(Request("r", TOKENS + [1], 1))
    assert hit.num_tokens == expected
    if expected == 4:
        # g0 tokens [0, 4) = positions 0, 1; g1 position 0; g2 checkpoint at 4 = position 0.
        assert hit.block_ids == ([planted[0][0], planted[0][1]], [planted[1][0]], [planted[2][0]])
    if expected == 8:
        assert hit.block_ids == ([planted[0][i] for i in range(4)], [N, planted[1][1]], [N, planted[2][1]])
    kv.check_integrity()


def test_block_sizes_give_hash_unit_and_alignment() -> None:
    groups = [make_group(FULL, 2), make_group(SLIDING, 4, window=3), make_group(RECURRENT, 8)]
    coordinator = KVCacheManager(make_layout(groups, [8])).coordinator
    assert (coordinator.hash_block_size, coordinator.hit_alignment) == (2, 8)


def test_identical_groups_share_one_lookup() -> None:
    """Two sliding groups W = 3, block 2: a position counts only if both groups cache it.
    max_len 8: p = 8 needs position 3 (g1 lacks it) -> p = 6 needs position 2."""
    groups = [make_group(SLIDING, 2, window=3), make_group(SLIDING, 2, window=3)]
    kv = KVCacheManager(make_layout(groups, [32], max_model_len=32))
    assert len(kv.coordinator.open_batches) == 1
    plant(kv, TOKENS, 0, {0, 1, 2, 3})
    plant(kv, TOKENS, 1, {0, 1, 2})
    assert kv.get_computed_blocks(Request("r", TOKENS[:9], 1)).num_tokens == 6


def test_hit_blocks_come_from_every_group_or_none() -> None:
    """allocate_slots adopts a hybrid hit in every group, taking one reference per block."""
    kv = three_kinds()
    planted = [plant(kv, TOKENS, gid, positions) for gid, positions in enumerate([ALL_FULL, ALL, ALL])]
    request = Request("r", TOKENS + [1], 1)
    hit = kv.get_computed_blocks(request)
    assert kv.allocate_slots(request, 1, hit.num_tokens, hit) is not None
    pool = kv.pools[0]
    assert all(pool.ref_cnt[b] == 1 for b in planted[0].values())  # 8 full blocks
    assert pool.ref_cnt[planted[1][3]] == 1 and pool.ref_cnt[planted[1][2]] == 0  # window only
    # The checkpoint at 16 was the copy source of the new live state; with one state block it
    # is released again at once and stays cached.
    assert is_cached_free(pool, planted[2][3])
    assert kv.request_blocks(request).state_copies == [(2, planted[2][3], kv.block_ids(request)[2][-1])]
    kv.check_integrity()
