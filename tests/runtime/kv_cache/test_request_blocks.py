"""RequestBlocks and the manager's per-request API: the steady rule, state copies, ownership."""

from __future__ import annotations

import pytest
from hkv.runtime import CacheConfig, EvictionPolicy, KVCacheManager, Request
from hkv.runtime.kv_cache.eviction import Eviction
from hkv.runtime.kv_cache.kv_cache_manager import EVICTION_BY_POLICY
from hkv.runtime.kv_cache.request_blocks import RequestBlocks
from rt_layouts import FULL, RECURRENT, make_group, make_layout


@pytest.mark.parametrize(("until_computed", "until_tokens", "copies", "num_computed", "num_tokens", "steady"), [
    (0, 0, [], 0, 0, False),  # fresh: never steady
    (None, 8, [], 5, 8, True),  # no release or cache bound; 8 slots held
    (None, 8, [], 5, 9, False),  # a 9th slot needs a block
    (6, 8, [], 5, 8, True),
    (6, 8, [], 6, 7, False),  # computed reached the next release/cache point
    (None, 8, [(1, 2, 3)], 5, 6, False),  # a state copy waits for the runner
])
def test_steady_rule(until_computed: int | None, until_tokens: int, copies: list[tuple[int, int, int]],
                     num_computed: int, num_tokens: int, steady: bool) -> None:
    rb = RequestBlocks(Request("r", [1], 1), num_groups=1)
    rb.steady_until_computed, rb.steady_until_tokens = until_computed, until_tokens
    rb.state_copies.extend(copies)
    assert rb.is_steady(num_computed, num_tokens) is steady


def test_manager_answers_the_steady_rule_for_the_scheduler() -> None:
    """Full attention, block 4, caching on. After a 6-token prefill the first block (tokens
    0..3) waits to be cached: not steady. Once the step at 6 computed tokens has cached it, the
    next block boundary is 8 and 2 blocks hold 8 slots: a decode at 7 computed tokens needs
    nothing new, two more tokens do."""
    kv = KVCacheManager(make_layout([make_group(FULL, 4)], [10], max_model_len=32))
    request = Request("r", list(range(6)), 4)
    assert not kv.is_steady(request, 1)  # holds nothing
    kv.allocate_slots(request, 6)
    request.num_computed_tokens = 6
    assert not kv.is_steady(request, 1)
    request.append_output_token(1)
    kv.allocate_slots(request, 1)
    request.num_computed_tokens = 7
    assert kv.is_steady(request, 1) and not kv.is_steady(request, 2)
    assert kv.allocate_slots(request, 1) is kv.no_new_blocks
    kv.free(request)
    assert not kv.is_steady(request, 1) and kv.block_ids(request) == ()


def test_state_copies_are_taken_once() -> None:
    """Recurrent (block 4, one state block): a step from 4 to 8 tokens moves the live state
    from block 1 to block 2 (see test_recurrent_state_manager)."""
    kv = KVCacheManager(make_layout([make_group(RECURRENT, 4, num_state_blocks=1)], [8], max_model_len=32))
    request = Request("r", list(range(10)), 1)
    kv.allocate_slots(request, 4)
    assert kv.take_state_copies(request) == ()  # a fresh state: nothing to copy
    request.num_computed_tokens = 4
    kv.allocate_slots(request, 4)
    assert kv.take_state_copies(request) == ((0, 1, 2),)
    assert kv.take_state_copies(request) == ()
    assert kv.take_state_copies(Request("other", [1], 1)) == ()


def test_integrity_catches_a_block_before_the_skipped_frontier() -> None:
    rb = RequestBlocks(Request("r", [1], 1), num_groups=2)
    rb.block_ids = [[0, 0, 5], [7]]
    rb.num_skipped_blocks = [2, 0]
    assert rb.check_integrity(2) == [(5, 0), (7, 1)]
    rb.block_ids[0][1] = 4
    with pytest.raises(AssertionError, match="skipped frontier 2"):
        rb.check_integrity(2)


def test_every_policy_has_an_eviction() -> None:
    kv = KVCacheManager(make_layout([make_group(FULL, 4)], [4], max_model_len=32))
    for policy in EvictionPolicy:
        assert isinstance(EVICTION_BY_POLICY[policy](kv.coordinator, CacheConfig(eviction_policy=policy)), Eviction)


def test_request_carries_the_decode_steady_bound() -> None:
    """The scheduler's per-step check, Request.steady_decode_until, follows the manager: full
    attention, block 4, caching on (as test_manager_answers_the_steady_rule_for_the_scheduler).
    The prefill allocated at 0 computed tokens: the next cache point is the boundary 4 and two
    blocks hold 8 slots, bound min(4, 8) = 4, so the decode at 6 computed is not steady. The
    decode allocated at 6: next boundary 8, slots 8, bound 8 (decodes from 6 and 7 are steady).
    Freed: 0."""
    kv = KVCacheManager(make_layout([make_group(FULL, 4)], [10], max_model_len=32))
    request = Request("r", list(range(6)), 4)
    assert request.steady_decode_until == 0
    kv.allocate_slots(request, 6)
    request.num_computed_tokens = 6
    assert request.steady_decode_until == 4 and not kv.is_steady(request, 1)
    request.append_output_token(1)
    kv.allocate_slots(request, 1)
    request.num_computed_tokens = 7
    assert request.steady_decode_until == 8 and kv.is_steady(request, 1)
    kv.free(request)
    assert request.steady_decode_until == 0


def test_a_waiting_state_copy_makes_decodes_unsteady_until_taken() -> None:
    """Recurrent, block 4, one state block: the step 4 -> 8 queues the copy (0, 1, 2); until the
    runner takes it no decode is steady; once taken the bound is what the manager computed."""
    kv = KVCacheManager(make_layout([make_group(RECURRENT, 4, num_state_blocks=1)], [8], max_model_len=32))
    request = Request("r", list(range(8)), 4)
    kv.allocate_slots(request, 4)
    request.num_computed_tokens = 4
    kv.allocate_slots(request, 4)
    assert request.steady_decode_until == 0 and not kv.is_steady(request, 1)
    assert kv.take_state_copies(request) == ((0, 1, 2),)
    rb = kv.request_blocks(request)
    assert request.steady_decode_until == rb.steady_decode_until() > 0
