"""Decode runs (scheduler/decode_run.py) change how fast a replay goes, never what it reports:
the same workload replayed with and without them gives the same report, field for field, on
every cache kind, with pools small enough to preempt (a step a run must hand back to
`Scheduler.schedule`), a roofline step cost, and sessions that depend on earlier requests."""

from __future__ import annotations

from array import array
from dataclasses import asdict, replace

import pytest
from rt_layouts import CHUNKED, FULL, RECURRENT, SLIDING, make_group, make_layout

from hkv.runtime.kv_cache.cache_config import CacheConfig, EvictionPolicy
from hkv.runtime.kv_cache.kv_cache_manager import KVCacheManager
from hkv.runtime.request import Request
from hkv.runtime.scheduler.scheduler import Scheduler, SchedulerConfig
from hkv.runtime.simulation.metrics.step_cost import StepCost
from hkv.runtime.simulation.simulator import SimulationConfig, Simulator
from hkv.runtime.simulation.workload_request import WorkloadRequest


def _workload(num_requests: int, shared_len: int) -> list[WorkloadRequest]:
    """Staggered requests sharing a `shared_len`-token prefix, outputs of 9 to 30 tokens, every
    fourth one the next turn of the request before it (its prompt + output + 3 tokens)."""
    requests: list[WorkloadRequest] = []
    for i in range(num_requests):
        output = array("q", range(10_000 * (i + 1), 10_000 * (i + 1) + 9 + (i * 7) % 22))
        if i % 4 == 3:
            parent = requests[-1]
            prompt = parent.prompt_token_ids + parent.output_token_ids + array("q", [5, 6, 7])
            requests.append(WorkloadRequest(f"r{i}", 0.013 * i, prompt, output, depends_on=i - 1))
            continue
        prompt = array("q", range(1, shared_len + 1)) + array("q", range(1000 * i, 1000 * i + 3 + i % 11))
        requests.append(WorkloadRequest(f"r{i}", 0.013 * i, prompt, output))
    return requests


_ROOFLINE = StepCost("test", hbm_bytes_per_s=1e11, dense_flops_per_s=1e13, dense_weight_bytes=10**8,
                     expert_weight_bytes=0, num_experts=0, experts_per_token=0, flops_per_token=2e8,
                     overhead_s=0.002)

# (case, groups, blocks per pool, max_num_seqs, step cost, eviction)
CASES = [
    ("full, roomy", [make_group(FULL, 4)], [200], 8, None, EvictionPolicy.LRU),
    ("full, preempting", [make_group(FULL, 4)], [40], 8, None, EvictionPolicy.LRU),
    ("sliding + full, roofline", [make_group(SLIDING, 4, window=8), make_group(FULL, 4)], [90], 6, _ROOFLINE,
     EvictionPolicy.GROUP_AWARE),
    ("sliding + full, preempting", [make_group(SLIDING, 4, window=8), make_group(FULL, 4)], [44], 6, None,
     EvictionPolicy.GROUP_AWARE),
    ("chunked + full", [make_group(CHUNKED, 4, chunk=8), make_group(FULL, 4)], [80], 6, None, EvictionPolicy.LRU),
    ("recurrent + full, two pools", [make_group(RECURRENT, 4, pool_id=1), make_group(FULL, 4)], [70, 5], 4,
     _ROOFLINE, EvictionPolicy.LRU),
]


def _replay(groups, pool_blocks, max_num_seqs, step_cost, eviction, decode_runs: bool) -> Simulator:
    layout = make_layout(groups, pool_blocks, max_model_len=96, in_flight_tokens=8)
    config = SimulationConfig(SchedulerConfig(max_num_batched_tokens=16, max_num_seqs=max_num_seqs),
                              CacheConfig(eviction_policy=eviction), step_cost=step_cost,
                              check_integrity_every=1, decode_runs=decode_runs)
    simulator = Simulator(layout, _workload(24, 10), config)
    simulator.run()
    return simulator


@pytest.mark.parametrize(("case", "groups", "pool_blocks", "max_num_seqs", "step_cost", "eviction"), CASES,
                         ids=[c[0] for c in CASES])
def test_decode_runs_report_what_single_steps_report(case, groups, pool_blocks, max_num_seqs, step_cost,
                                                     eviction) -> None:
    stepped = _replay(groups, pool_blocks, max_num_seqs, step_cost, eviction, decode_runs=False)
    ran = _replay(groups, pool_blocks, max_num_seqs, step_cost, eviction, decode_runs=True)
    assert stepped.num_decode_run_steps == 0
    # Under pressure requests mostly wait, so fewer steps qualify; some must still.
    least = 0 if "preempting" in case else ran.report().num_steps // 8
    assert ran.num_decode_run_steps > least, "the runs took few steps: nothing tested"
    expected = {k: v for k, v in asdict(stepped.report()).items() if k != "wall_s"}
    got = {k: v for k, v in asdict(ran.report()).items() if k != "wall_s"}
    assert got == expected
    assert got["num_finished"] == 24
    if "preempting" in case:
        assert got["num_preemptions"] > 0  # runs never preempt: Scheduler.schedule took those steps


def test_a_wrong_step_count_is_caught() -> None:
    """The comparison can fail: a replay whose fixed step time differs by 1 % of a step is not
    the same report."""
    groups, pool_blocks = [make_group(FULL, 4)], [200]
    ran = _replay(groups, pool_blocks, 8, None, EvictionPolicy.LRU, decode_runs=True).report()
    layout = make_layout(groups, pool_blocks, max_model_len=96, in_flight_tokens=8)
    config = SimulationConfig(SchedulerConfig(16, 8), CacheConfig(eviction_policy=EvictionPolicy.LRU),
                              check_integrity_every=1, decode_runs=False)
    other = Simulator(layout, _workload(24, 10), replace(config, step_base_s=0.0101)).run()
    assert other.simulated_s != ran.simulated_s


def test_steady_steps_by_hand() -> None:
    """One request, full attention, blocks of 4, hkv's cache timing (a full block is cached by
    the next allocation, once its tokens are computed), a 6-token prompt. After the prefill it
    has computed 6 tokens and holds 2 blocks (8 slots); block 0 is not cached yet.
    Decode step 1 (computed 6 -> 7): an event, it caches block 0; then steady below 8.
    Step 2 (7 -> 8): steady. Step 3 (8 -> 9): an event, it caches block 1 and takes block 2;
    steady below 12: steps 4, 5, 6. With 12 output tokens (the prefill sampled the first) it
    finishes at decode step 11, holding 18 tokens."""
    layout = make_layout([make_group(FULL, 4)], [20], max_model_len=64, in_flight_tokens=8)
    scheduler = Scheduler(KVCacheManager(layout), SchedulerConfig(16, 4))
    request = Request("a", list(range(1, 7)), 12)
    scheduler.add_request(request)
    output = scheduler.schedule()
    scheduler.update_from_output(output, {"a": 100})
    outputs = iter(range(101, 200))

    def sampled(r: Request, count: int) -> list[int]:
        return [next(outputs) for _ in range(count)]

    run = scheduler.decode_run(sampled)
    assert run is not None and run.num_steady_steps == 0
    assert run.schedule_step()
    assert run.update_step() == []
    assert run.num_steady_steps == 1
    run.advance_steady(1)
    assert run.num_steady_steps == 0
    assert run.schedule_step()
    assert run.update_step() == []
    assert run.num_steady_steps == 3
    run.close()
    assert request.num_computed_tokens == 9 and list(request.token_ids[6:]) == [100, 101, 102, 103]
    assert scheduler.num_steps == 4
    assert len(scheduler.kv.block_ids(request)[0]) == 3
    decode_steps = 3
    while scheduler.running:
        run = scheduler.decode_run(sampled)
        assert run is not None
        steady = run.num_steady_steps
        if steady:
            run.advance_steady(steady)
            decode_steps += steady
        else:
            assert run.schedule_step()
            run.update_step()
            decode_steps += 1
        run.close()
    assert decode_steps == 11 and request.num_tokens == 18
    assert list(request.token_ids[6:]) == [100, *range(101, 112)]


def test_no_run_while_a_request_waits_or_prefills() -> None:
    layout = make_layout([make_group(FULL, 4)], [20], max_model_len=64, in_flight_tokens=8)
    scheduler = Scheduler(KVCacheManager(layout), SchedulerConfig(4, 4))
    scheduler.add_request(Request("a", list(range(1, 11)), 3))
    assert scheduler.decode_run(lambda r, n: [0] * n) is None  # waiting
    output = scheduler.schedule()  # 4 of its 10 prompt tokens (budget 4)
    scheduler.update_from_output(output, {})
    assert scheduler.decode_run(lambda r, n: [0] * n) is None  # in prefill
