"""Lanes: lockstep groups of hkv's own layouts held as one allocator entry (lanes.py, LanePool).

Three sliding groups and one full group (block size 4, window 8) in one pool: the sliding groups
form a lane, the full group is alone. Numbers by hand; the lane manager must count what the
per-group manager counts, hold one table for the lane, and survive the scheduler's checks.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hkv.runtime import CacheConfig, KVCacheManager, Request, Scheduler, SchedulerConfig
from hkv.runtime.kv_cache.block_pool import NULL_BLOCK_ID, BlockPool
from hkv.runtime.kv_cache.cache_config import EvictionPolicy
from hkv.runtime.kv_cache.lane_pool import LanePool
from hkv.runtime.kv_cache.lanes import lanes_of
from rt_harness import FakeRunner, drive
from rt_layouts import FULL, SLIDING, make_group, make_layout


def gemma_like(num_blocks: int, name: str = "hkv"):
    groups = [make_group(SLIDING, 4, window=8)] * 3 + [make_group(FULL, 4)]
    return replace(make_layout(groups, [num_blocks], max_model_len=64), name=name)


@pytest.mark.parametrize(("name", "physical", "drops", "lanes"), [
    ("hkv", False, True, [[0, 1, 2]]),  # a replay of hkv's layout: the sliding groups are a lane
    ("partitioned", False, True, [[0, 1, 2]]),
    ("hkv", True, True, []),  # live runs index tensors by block id
    ("hkv", False, False, []),  # DuplicateBlocks.KEEP (vLLM's map) keeps per-group blocks
    ("vllm", False, True, []),  # vLLM's layouts stay vLLM's manager
])
def test_lanes_are_selected_from_the_layout(name: str, physical: bool, drops: bool, lanes: list) -> None:
    assert lanes_of(gemma_like(40, name), physical, drops) == lanes


def test_the_simulator_holds_lanes_only_for_hkv_layouts() -> None:
    from hkv.runtime.simulation.simulator import Simulator

    assert isinstance(Simulator(gemma_like(40), []).kv.pools[0], LanePool)
    assert isinstance(Simulator(gemma_like(40, "vllm"), []).kv.pools[0], BlockPool)
    assert isinstance(KVCacheManager(gemma_like(40)).pools[0], BlockPool)  # physical ids by default


@pytest.mark.parametrize("physical", [True, False])
def test_hand_traced_counts(physical: bool) -> None:
    """39 usable blocks. A 16-token prompt holds 4 positions in 4 groups: 16 blocks. Its first
    decode step needs position 4 (17 tokens) and releases the sliding positions 0-1
    ((16 - 8 + 1) // 4 = 2) of three groups: 23 - 4 + 6 = 25 free."""
    kv = KVCacheManager(gemma_like(40), CacheConfig(eviction_policy=EvictionPolicy.LRU),
                        physical_block_ids=physical)
    a = Request("a", list(range(16)), 4)
    assert kv.allocate_slots(a, 16) is not None
    assert kv.pools[0].num_free_blocks == 23
    a.num_computed_tokens = 16
    a.append_output_token(99)
    assert kv.allocate_slots(a, 1) is not None
    assert kv.pools[0].num_free_blocks == 25
    stats = kv.stats()
    assert stats.num_blocks_in_use == (3, 3, 3, 5)
    assert stats.num_early_released_blocks == (2, 2, 2, 0)
    tables = kv.block_ids(a)
    assert [t[:2] for t in tables[:3]] == [[NULL_BLOCK_ID] * 2] * 3
    assert (tables[0] is tables[1] is tables[2]) is not physical  # one table for the lane
    kv.check_integrity()
    # The same prompt again hits 12 tokens (of at most 15, aligned to 4): full attention caches
    # positions 0-3; the sliding lane cached the window before its resend point 12 (positions
    # 1-2, (12 - 8 + 1) // 4 = 1) before releasing position 1.
    b = Request("b", list(range(16)), 4)
    hit = kv.get_computed_blocks(b)
    assert hit.num_tokens == 12
    assert [len(blocks) for blocks in hit.block_ids] == [3, 3, 3, 3]
    kv.free(a)
    kv.check_integrity()
    assert kv.pools[0].num_free_blocks == 39


def _replay(num_blocks: int, physical: bool, policy: EvictionPolicy) -> tuple[int, int, int]:
    """Shared 12-token prefixes, 24 requests, driven with the fake runner's checks (windows hold
    the request's tokens, integrity after every schedule and update)."""
    kv = KVCacheManager(gemma_like(num_blocks), CacheConfig(eviction_policy=policy), physical_block_ids=physical)
    scheduler = Scheduler(kv, SchedulerConfig(max_num_batched_tokens=16, max_num_seqs=4))
    requests = [Request(f"r{i}", [1000 * (i % 3) + t for t in range(12)] + [i * 7 + t for t in range(2 + i % 5)], 3 + i % 4)
                for i in range(24)]
    steps = drive(scheduler, requests, runner=FakeRunner(kv))
    return steps, kv.stats().num_hit_tokens, scheduler.num_preemptions


@pytest.mark.parametrize("policy", [EvictionPolicy.LRU, EvictionPolicy.GROUP_AWARE])
def test_lanes_replay_as_per_group_blocks_without_pressure(policy: EvictionPolicy) -> None:
    assert _replay(200, False, policy) == _replay(200, True, policy)


@pytest.mark.parametrize("policy", [EvictionPolicy.LRU, EvictionPolicy.GROUP_AWARE])
def test_lanes_keep_every_invariant_under_pressure(policy: EvictionPolicy) -> None:
    """A pool of 40 blocks: evictions and preemptions; every check of `drive` holds, and lanes
    hit at least as much (an evicted position loses all its groups' blocks at once, not one
    group's prefix after another) with no more preemptions. Measured: 68 vs 64 hit tokens,
    6 vs 6 (LRU) and 4 vs 4 (group-aware) preemptions."""
    _, lane_hits, lane_preemptions = _replay(40, False, policy)
    _, group_hits, group_preemptions = _replay(40, True, policy)
    assert lane_preemptions <= group_preemptions and lane_preemptions > 0
    assert lane_hits >= group_hits
