"""Groups of one kind with different block sizes (Inkling: its 4-token conv-state windows in
blocks of 4 beside 16-token attention blocks), through the real manager, coordinator and
scheduler.

A hand-built layout shaped like Inkling: a conv window (W = 4, blocks of 4), an attention window
(W = 12, blocks of 8), full attention (blocks of 16). Block hashes are then taken every
gcd = 4 tokens and a hit must be a multiple of lcm = 16 tokens in every group; each group names
its block by the fine hash at the block's end. The figures below are worked by hand.
"""

from __future__ import annotations

import json
from array import array
from pathlib import Path

import pytest
from rt_harness import FakeRunner, drive
from rt_layouts import CHUNKED, FULL, RECURRENT, SLIDING, make_group, make_layout
from rt_replay import replay_both_ways

from hkv.model_specs.from_hf_config import from_hf_config
from hkv.planner.plan import plan
from hkv.planner.plan_config import PlanConfig
from hkv.runtime import KVCacheManager, Request, Scheduler
from hkv.runtime.kv_cache.cache_config import CacheConfig, EvictionPolicy
from hkv.runtime.kv_cache.vllm_compat import SlidingRetention
from hkv.runtime.scheduler.scheduler import SchedulerConfig
from hkv.runtime.simulation.workload_request import WorkloadRequest

CONV, WINDOW, GLOBAL = 0, 1, 2  # group ids


def _groups():
    return [make_group(SLIDING, 4, window=4), make_group(SLIDING, 8, window=12), make_group(FULL, 16)]


def _manager(pool_blocks: int = 200, retention: SlidingRetention = SlidingRetention.HIT_POINTS) -> KVCacheManager:
    return KVCacheManager(make_layout(_groups(), [pool_blocks], max_model_len=256, in_flight_tokens=16),
                          CacheConfig(eviction_policy=EvictionPolicy.LRU, sliding_retention=retention))


def _run_alone(kv: KVCacheManager, request: Request) -> None:
    """Prefill the whole prompt in one step, then free (its blocks stay cached-free)."""
    hit = kv.get_computed_blocks(request)
    assert kv.allocate_slots(request, request.num_tokens - hit.num_tokens, hit.num_tokens, hit) is not None
    request.num_computed_tokens = request.num_tokens
    kv.free(request)


def test_hash_unit_is_the_gcd_and_hits_land_on_the_lcm() -> None:
    kv = _manager()
    assert kv.coordinator.hash_block_size == 4
    assert kv.coordinator.hit_alignment == 16
    assert [m.hash_stride for m in kv.coordinator.managers] == [1, 2, 4]


def test_a_hit_is_cut_to_the_coarsest_alignment() -> None:
    """Windows cached whole (SlidingRetention.ALL, vLLM's rule). A computed 70 tokens; B shares
    its first 60. Full attention has blocks 0-2 (tokens 0-47) in common (block 3 ends at 63, past
    the shared part), so the hit is at most 48. At 48 the attention window needs blocks
    [(48 - 11) // 8, 48 // 8) = [4, 6), the conv window block (48 - 3) // 4 = 11: A cached them
    before releasing them (its windows moved past), so B hits 48 tokens and finds
    48 // 4 - 11 = 1 conv block, 6 - 4 = 2 window blocks, 3 full blocks. With one block size of 4
    it would have been 60."""
    kv = _manager(retention=SlidingRetention.ALL)
    _run_alone(kv, Request("a", list(range(70)), 1))
    b = Request("b", list(range(60)) + [999] * 20, 1)
    hit = kv.get_computed_blocks(b)
    assert hit.num_tokens == 48
    conv, window, full = hit.block_ids
    assert [len(conv) - list(conv).count(0), len(window) - list(window).count(0), len(full)] == [1, 2, 3]
    assert (len(conv), len(window)) == (12, 6)  # null blocks stand for the skipped positions


def test_a_hit_needs_the_short_window_block_too() -> None:
    """hkv's retention (SlidingRetention.HIT_POINTS): A keeps its windows' blocks only before its
    expected hit point, its own resend length (70 - 1) // 16 * 16 = 64: conv position
    (64 - 3) // 4 = 15, window positions [(64 - 11) // 8, 8) = [6, 8). B, sharing 60 tokens, has
    a full-attention hit of 48, but the conv window at 48 needs position 11, released uncached,
    and no multiple of 16 below 48 finds its conv block either (each needs position p / 4 - 1):
    no hit. C, the same 70 tokens plus more, hits 64 (full blocks 0-3, conv 15, window 6-7)."""
    kv = _manager()
    _run_alone(kv, Request("a", list(range(70)), 1))
    assert kv.get_computed_blocks(Request("b", list(range(60)) + [999] * 20, 1)).num_tokens == 0
    assert kv.get_computed_blocks(Request("c", list(range(70)) + [999] * 20, 1)).num_tokens == 64


def test_blocks_to_pop_count_each_block_size() -> None:
    """A 20-token prompt, then one decode token: 21 tokens need cdiv(21, 4) = 6 conv blocks (it
    holds 5 positions), cdiv(21, 8) = 3 window blocks (holds 3) and cdiv(21, 16) = 2 full blocks
    (holds 2): one block to pop, from the conv group. `surely_fit` then needs 1 free block per
    such request."""
    kv = _manager(pool_blocks=12)
    r = Request("r", list(range(20)), 5)
    assert kv.allocate_slots(r, 20) is not None
    r.num_computed_tokens = 20
    r.append_output_token(7)
    rb = kv.request_blocks(r)
    assert [len(t) for t in rb.block_ids] == [5, 3, 2]
    assert kv.coordinator.max_blocks_to_pop(rb, 21) == [1]
    # 11 usable blocks (12 less the null block), 10 taken, 1 free. The next allocation first
    # releases the skipped ones: conv (20 - 3) // 4 = 4, window (20 - 11) // 8 = 1: 6 free.
    assert kv.pools[0].num_free_blocks == 1
    kv.allocate_slots(r, 0)
    assert kv.pools[0].num_free_blocks == 6
    assert kv.surely_fit([r], 1)


def _workload(num_requests: int) -> list[WorkloadRequest]:
    requests = []
    for i in range(num_requests):
        shared = array("q", range(1, 1 + 37 + (i % 3) * 13))
        prompt = shared + array("q", range(1000 * (i + 1), 1000 * (i + 1) + 5 + (i * 7) % 29))
        output = array("q", range(50_000 + 100 * i, 50_000 + 100 * i + 3 + (i * 5) % 26))
        requests.append(WorkloadRequest(f"r{i}", 0.011 * i, prompt, output))
    return requests


@pytest.mark.parametrize("eviction", [EvictionPolicy.LRU, EvictionPolicy.GROUP_AWARE])
@pytest.mark.parametrize("pool_blocks", [400, 24])
def test_replay_is_the_same_with_and_without_decode_runs(eviction: EvictionPolicy, pool_blocks: int) -> None:
    """Integrity checked every step; decode runs (which trust max_blocks_to_pop / surely_fit per
    group) report what single steps report, with a tight pool (preemptions) and a roomy one."""
    layout = make_layout(_groups(), [pool_blocks], max_model_len=256, in_flight_tokens=16)
    report = replay_both_ways(layout, lambda: _workload(30), SchedulerConfig(max_num_batched_tokens=24, max_num_seqs=6),
                              eviction)
    assert report["num_finished"] == 30
    assert report["num_hit_tokens"] > 0
    if pool_blocks == 24:
        assert report["num_preemptions"] > 0


def _drive(kv: KVCacheManager, num_requests: int, max_num_batched_tokens: int) -> tuple[Scheduler, FakeRunner]:
    """The workload through the scheduler and the fake runner (rt_harness.drive checks integrity,
    held blocks and admission bounds every step)."""
    scheduler = Scheduler(kv, SchedulerConfig(max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=5))
    requests = [Request(w.request_id, list(w.prompt_token_ids), len(w.output_token_ids))
                for w in _workload(num_requests)]
    runner = FakeRunner(kv)
    drive(scheduler, requests, runner=runner)
    assert runner.num_checked_hits > 0
    return scheduler, runner


@pytest.mark.parametrize("pool_blocks", [500, 30])
def test_fake_runner_reads_every_window_intact(pool_blocks: int) -> None:
    """The runtime harness's fake model writes each token into its slot and checks, before every
    step, that every window (4 tokens in blocks of 4, 12 in blocks of 8) and the full prefix hold
    exactly the request's tokens; prefix hits are checked against what they claim."""
    scheduler, _ = _drive(_manager(pool_blocks), 24, 20)
    if pool_blocks == 30:
        assert scheduler.num_preemptions > 0


INKLING = Path(__file__).resolve().parents[2] / "data" / "configs" / "inkling_text.json"


@pytest.mark.parametrize(("layout_name", "budget_blocks", "preempts"),
                         [("vllm", 220, False), ("hkv", 160, False), ("partitioned", 600, True)])
def test_inkling_layouts_replay_intact(layout_name: str, budget_blocks: int, preempts: bool) -> None:
    """Inkling's real layouts (12 groups, block sizes 4, 16 and 32 in the vllm layout) through the
    scheduler and the fake runner, on budgets (in 1,441,792-byte vllm blocks) near the smallest
    that run the workload; the partitioned one's local pool runs out and preempts."""
    model = from_hf_config(json.loads(INKLING.read_text()), "inkling_text")
    cfg = PlanConfig(gpu=None, available_kv_memory_bytes=budget_blocks * 11 * 131_072, max_model_len=1024,
                     max_num_batched_tokens=64, enable_prefix_caching=True, expected_avg_seq_len=200)
    layout = plan(model, cfg).reports[layout_name].layout
    assert {g.block_size for g in layout.groups} >= {4, 16}
    scheduler, _ = _drive(KVCacheManager(layout), 18, 64)
    assert (scheduler.num_preemptions > 0) == preempts


def _four_kinds(pools: list[int]):
    """Every kind at once over three pools, four block sizes: states (blocks of 16) in pool 2, a
    conv window (W 4, blocks of 4), an attention window (W 12, blocks of 8) and local chunks of 32
    (blocks of 8) in pool 1, full attention (16) in pool 0."""
    groups = [make_group(RECURRENT, 16, pool_id=2), make_group(SLIDING, 4, window=4, pool_id=1),
              make_group(SLIDING, 8, window=12, pool_id=1), make_group(CHUNKED, 8, chunk=32, pool_id=1),
              make_group(FULL, 16, pool_id=0)]
    return make_layout(groups, pools, max_model_len=256, in_flight_tokens=16)


@pytest.mark.parametrize(("pools", "preempts"), [([300, 300, 40], False), ([18, 40, 20], True)])
def test_four_kinds_in_three_pools(pools: list[int], preempts: bool) -> None:
    """The coordinator assumes no pair of kinds: hits must satisfy all five groups (lcm 16), the
    fake runner finds every window, chunk and state intact, and decode runs report what single
    steps do. A full-attention pool of 17 usable blocks preempts."""
    kv = KVCacheManager(_four_kinds(pools), CacheConfig(eviction_policy=EvictionPolicy.LRU))
    assert (kv.coordinator.hash_block_size, kv.coordinator.hit_alignment) == (4, 16)
    scheduler, _ = _drive(kv, 24, 20)
    assert (scheduler.num_preemptions > 0) == preempts
    report = replay_both_ways(_four_kinds(pools), lambda: _workload(30),
                              SchedulerConfig(max_num_batched_tokens=24, max_num_seqs=6), EvictionPolicy.GROUP_AWARE)
    assert report["num_finished"] == 30
