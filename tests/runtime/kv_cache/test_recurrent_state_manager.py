"""RecurrentStateManager: checkpoint hits, one live state, copies, release before allocation."""

from __future__ import annotations

import pytest
from hkv.runtime import NULL_BLOCK_ID, KVCacheManager, Request
from rt_layouts import RECURRENT, hit_len, ids, lone_manager, make_group, make_layout
from rt_pool import free_block_ids, is_cached_free

N = NULL_BLOCK_ID

# block_size 4: position i holds the checkpoint at boundary 4 * (i + 1).
HIT_CASES = [
    # (cached positions, max_len, alignment, expected hit)
    ({1, 3}, 19, 4, 16),  # checkpoint at 16
    ({1}, 19, 4, 8),  # 16 and 12 missing -> 8
    ({1}, 19, 8, 8),  # alignment 8: 16 then 8
    ({2}, 19, 8, 0),  # the checkpoint at 12 is not on the alignment
    (set(), 19, 4, 0),
    ({0}, 3, 4, 0),  # max_len below one block
]


@pytest.mark.parametrize(("cached", "max_len", "alignment", "expected"), HIT_CASES)
def test_longest_hit(cached: set[int], max_len: int, alignment: int, expected: int) -> None:
    assert hit_len(lone_manager(make_group(RECURRENT, 4)), cached, max_len, alignment) == expected


@pytest.mark.parametrize(("num_computed", "skipped_blocks"), [(0, 0), (1, 0), (4, 0), (5, 1), (8, 1), (9, 2)])
def test_skipped_blocks(num_computed: int, skipped_blocks: int) -> None:
    """The state after n tokens lives at position cdiv(n, 4) - 1; earlier ones are not needed."""
    assert lone_manager(make_group(RECURRENT, 4)).num_skipped_blocks(num_computed) == skipped_blocks


def test_one_state_block_lifecycle() -> None:
    """Pool of 8 blocks, block_size 4, num_state_blocks 1."""
    kv = KVCacheManager(make_layout([make_group(RECURRENT, 4, num_state_blocks=1)], [8], max_model_len=32))
    pool = kv.pools[0]
    a = Request("a", list(range(10)), max_output_len=4)
    assert ids(kv.allocate_slots(a, 8)) == [[1]]  # a step ending on the boundary 8
    # A fresh state: nothing to copy.
    assert kv.block_ids(a) == [[N, 1]] and kv.request_blocks(a).state_copies == []
    a.num_computed_tokens = 8
    # Next step: block 1 holds the state at 8 -> cached as a checkpoint; the live state moves to
    # position 2. With one state block, 1 is released first (cached: LRU back) and 2 is popped.
    assert ids(kv.allocate_slots(a, 2)) == [[2]]
    assert kv.block_ids(a) == [[N, N, 2]] and kv.request_blocks(a).state_copies == [(0, 1, 2)]
    assert free_block_ids(pool) == [3, 4, 5, 6, 7, 1] and is_cached_free(pool, 1)
    a.num_computed_tokens = 10
    kv.check_integrity()

    b = Request("b", list(range(8)) + [50, 51, 52], max_output_len=4)
    hit = kv.get_computed_blocks(b)  # max_len 10 -> checkpoint at 8
    assert hit.num_tokens == 8 and hit.block_ids == ([N, 1],)
    assert kv.can_admit(b, hit)
    # Touch 1, release it again (one state block), pop 3; the runner copies 1 -> 3.
    assert ids(kv.allocate_slots(b, 3, 8, hit)) == [[3]]
    assert kv.block_ids(b) == [[N, N, 3]] and kv.request_blocks(b).state_copies == [(0, 1, 3)]
    assert is_cached_free(pool, 1)
    kv.check_integrity()
    kv.free(a)
    kv.free(b)
    assert kv.usage == 0.0
    kv.check_integrity()


def test_two_state_blocks_keep_the_source_until_the_next_step() -> None:
    kv = KVCacheManager(make_layout([make_group(RECURRENT, 4, num_state_blocks=2)], [8], max_model_len=32))
    a = Request("a", list(range(11)), max_output_len=4)
    kv.allocate_slots(a, 8)
    a.num_computed_tokens = 8
    assert ids(kv.allocate_slots(a, 2)) == [[2]]
    assert kv.block_ids(a) == [[N, 1, 2]] and kv.request_blocks(a).state_copies == [(0, 1, 2)]
    a.num_computed_tokens = 10
    kv.allocate_slots(a, 1)  # 10 computed: position 1 is no longer needed
    assert kv.block_ids(a) == [[N, N, 2]]
    assert is_cached_free(kv.pools[0], 1) and kv.stats().num_early_released_blocks == (1,)
    kv.check_integrity()


def test_state_inside_a_block_is_updated_in_place() -> None:
    kv = KVCacheManager(make_layout([make_group(RECURRENT, 4, num_state_blocks=1)], [8], max_model_len=32))
    a = Request("a", list(range(6)), max_output_len=4)
    assert ids(kv.allocate_slots(a, 5)) == [[1]]
    a.num_computed_tokens = 5
    assert ids(kv.allocate_slots(a, 1)) == [[]]  # tokens 5 -> 6 stay in position 1
    assert kv.block_ids(a) == [[N, 1]] and kv.request_blocks(a).state_copies == []


def test_no_checkpoint_when_a_step_crosses_the_boundary() -> None:
    kv = KVCacheManager(make_layout([make_group(RECURRENT, 4)], [8], max_model_len=32))
    a = Request("a", list(range(10)), max_output_len=4)
    kv.allocate_slots(a, 10)  # one step over the boundary 8: no state at 8 ever exists
    a.num_computed_tokens = 10
    kv.free(a)
    assert kv.get_computed_blocks(Request("b", list(range(10)) + [1], 1)).num_tokens == 0
