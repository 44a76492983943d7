"""CircularBufferManager: Step5's CSA tail ring as vLLM 0.33 keeps it (single_type_kv_cache_manager.py
l.1186-1271): one block per request, claimed on the first allocation, kept until the request ends,
never cached and never limiting a prefix hit (kv_cache_coordinator.py l.722-731 skips groups that are
not prefix_cacheable; kv_cache_interface.py l.998-1000: CircularBufferSpec.prefix_cacheable False).

Hand-built layout: a full group (block 4) beside a circular group (block 4), one pool of 20 blocks
(block 0 null). Then the tiny Step5 of tests/data/configs/step5_tiny.json planned and replayed
through the Simulator with integrity checked every step.
"""

from __future__ import annotations

import json
from array import array
from pathlib import Path

import pytest
from hkv.model_specs.cache_spec import AttentionCacheSpec, CacheKind
from hkv.model_specs.from_hf_config import from_hf_config
from hkv.model_specs.step5_layers import CircularBufferCacheSpec
from hkv.planner.layout import KVCacheGroup
from hkv.planner.plan import plan
from hkv.planner.plan_config import PlanConfig
from hkv.runtime import NULL_BLOCK_ID, KVCacheManager, Request
from hkv.runtime.kv_cache.cache_config import EvictionPolicy
from hkv.runtime.scheduler.scheduler import SchedulerConfig
from hkv.runtime.simulation.workload_request import WorkloadRequest
from rt_layouts import FULL, make_layout
from rt_replay import replay_both_ways

CIRCULAR = CacheKind.CIRCULAR
TINY = json.loads((Path(__file__).resolve().parents[2] / "data" / "configs" / "step5_tiny.json").read_text())


def _layout():
    full = AttentionCacheSpec(FULL, 1, 8, 8, 2)
    ring = CircularBufferCacheSpec(CIRCULAR, 1, 8, 8, 2)
    groups = [KVCacheGroup(FULL, ("f",), (0,), full, 4, full.page_size_bytes(4)),
              KVCacheGroup(CIRCULAR, ("r",), (0,), ring, 4, ring.page_size_bytes(4))]
    return make_layout(groups, [20])


def test_one_ring_block_for_the_whole_request() -> None:
    """10 tokens: 3 full blocks + 1 ring block; decoding to 17 tokens adds 2 full blocks, no ring
    block (the ring table grows by null positions only)."""
    kv = KVCacheManager(_layout())
    request = Request("a", list(range(10)), 8)
    kv.allocate_slots(request, 10)
    full, ring = kv.block_ids(request)
    assert len(full) == 3 and ring[0] != NULL_BLOCK_ID and ring[1:] == [NULL_BLOCK_ID] * 2
    assert kv.pools[0].num_free_blocks == 19 - 4
    request.num_computed_tokens = 10
    for token in range(100, 107):
        request.append_output_token(token)
    kv.allocate_slots(request, 7)
    full, ring = kv.block_ids(request)
    assert len(full) == 5 and len(ring) == 5 and sum(b != NULL_BLOCK_ID for b in ring) == 1
    assert kv.pools[0].num_free_blocks == 19 - 6
    kv.check_integrity()


def test_a_hit_restores_the_full_group_and_claims_a_fresh_ring() -> None:
    """The ring never limits a hit: a second request with the same 12-token prompt hits 8 tokens
    (cdiv(12 - 1) down to the block, 2 full blocks) and holds [NULL, NULL, ring]: the hit's
    positions null, its own ring past them, never the first request's (released, not cached)."""
    kv = KVCacheManager(_layout())
    first = Request("a", list(range(12)), 4)
    kv.allocate_slots(first, 12)
    first_ring = kv.block_ids(first)[1][0]
    first.num_computed_tokens = 12
    kv.free(first)
    second = Request("b", list(range(12)), 4)
    computed = kv.get_computed_blocks(second)
    assert computed.num_tokens == 8 and list(computed.block_ids[1]) == [NULL_BLOCK_ID] * 2
    kv.allocate_slots(second, 4, 8, computed)
    full, ring = kv.block_ids(second)
    assert len(full) == 3 and ring[:2] == [NULL_BLOCK_ID] * 2 and ring[2] != NULL_BLOCK_ID
    assert kv.pools[0].block_hash[first_ring] is None  # the first ring was never cached
    kv.check_integrity()


def test_integrity_check_names_a_second_ring_block() -> None:
    kv = KVCacheManager(_layout())
    request = Request("a", list(range(10)), 4)
    kv.allocate_slots(request, 10)
    rb = kv.request_blocks(request)
    rb.block_ids[1][1] = kv.pools[0].allocate(1, 1)[0]
    with pytest.raises(AssertionError, match="circular group 1 holds blocks at \\[0, 1\\]"):
        kv.check_integrity()


def _workload() -> list[WorkloadRequest]:
    """32 requests: a system prompt of 200 or 900 tokens (i % 2), an own tail of 10-129 tokens and
    3-52 output tokens, arriving 10 ms apart."""
    def request(i: int) -> WorkloadRequest:
        prompt = array("q", range(1, 201 + (i % 2) * 700)) + array("q", range(5_000 * (i + 1), 5_000 * (i + 1) + 10 + (i * 17) % 120))
        return WorkloadRequest(f"r{i}", 0.01 * i, prompt, array("q", range(700_000 + 100 * i, 700_003 + 100 * i + (i * 7) % 50)))
    return [request(i) for i in range(32)]


@pytest.mark.parametrize("layout_name", ["vllm", "hkv"])
@pytest.mark.parametrize("eviction", [EvictionPolicy.LRU, EvictionPolicy.GROUP_AWARE])
def test_step5_plan_replays_with_integrity_checks(layout_name: str, eviction: EvictionPolicy) -> None:
    """The tiny Step5 (3 sliding layers + 1 sparse layer: K/V + summary + ring) at 18,432 B per block
    (tests/model_specs/test_step5.py works it by hand), 300 blocks: the longest prompt (1,029 tokens)
    asks 4 x 65 attention blocks + 1 ring block = 261 of the 299 usable ones free, so few run at once;
    hits reach the full and sliding groups while each request holds its one ring block."""
    cfg = PlanConfig(gpu=None, available_kv_memory_bytes=300 * 18_432, max_model_len=2048,
                     max_num_batched_tokens=2048)
    layout = plan(from_hf_config(TINY, "step5-tiny"), cfg).reports[layout_name].layout
    assert [g.kind for g in layout.groups] == [CacheKind.SLIDING] * 3 + [FULL, CIRCULAR]
    report = replay_both_ways(layout, _workload, SchedulerConfig(max_num_batched_tokens=256, max_num_seqs=8),
                              eviction)
    assert report["num_finished"] == 32
    assert report["num_hit_tokens"] > 0
