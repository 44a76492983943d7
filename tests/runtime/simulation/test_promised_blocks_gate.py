"""The hkv layout's admission gate (exact bounds) counts the blocks running requests take next:
the prompt blocks of requests still in prefill, the expected decode growth of the others
(hand-traced against vLLM's gate)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from hkv.planner.layout import BlockBound
from hkv.runtime import CacheConfig, KVCacheManager, Request, Scheduler, SchedulerConfig
from rt_layouts import FULL, make_group, make_layout


def first_steps_and_preemptions(bound: BlockBound) -> tuple[dict[str, int], int]:
    """Full attention, 4-token blocks, 10 usable blocks; 16 tokens a step, 8 per request (T).
    a: 24-token prompt (6 blocks), b: 20 tokens (5 blocks), both arrive at once, 1 output each."""
    layout = make_layout([make_group(FULL, 4)], [11], max_model_len=64, in_flight_tokens=8)
    layout = replace(layout, groups=tuple(replace(g, bound=bound) for g in layout.groups))
    kv = KVCacheManager(layout, CacheConfig(enable_caching=False))
    scheduler = Scheduler(kv, SchedulerConfig(max_num_batched_tokens=16, max_num_seqs=4))
    for request in (Request("a", list(range(24)), 1), Request("b", list(range(100, 120)), 1)):
        scheduler.add_request(request)
    first: dict[str, int] = {}
    while scheduler.has_unfinished_requests:
        output = scheduler.schedule()
        for entry in output.scheduled:
            first.setdefault(entry.request_id, output.step_id)
        scheduler.update_from_output(output, {e.request_id: 7 for e in output.scheduled if e.emits_token})
        kv.check_integrity()
    return first, scheduler.num_preemptions


@pytest.mark.parametrize(("bound", "b_first_step", "preemptions"), [
    # vLLM's gate: step 0, a takes 2 blocks (8 free); b's 5 fit, b takes 2 (6 free). Step 1: 2 +
    # 2 (2 free). Step 2: a takes its last 2 (0 free), b cannot grow: b (the newest) is preempted.
    (BlockBound.VLLM, 0, 1),
    # Exact bounds: step 0, a still takes 4 of the 8 free blocks: b's 5 wait (4 + 5 > 8). Step 1:
    # 6 free, 2 promised; step 2: 4 free, a holds its 6 (0 promised), 5 > 4. a finishes; step 3: b.
    (BlockBound.EXACT, 3, 0),
])
def test_prompt_blocks_of_requests_in_prefill_count_as_taken(bound, b_first_step, preemptions):
    first, num_preemptions = first_steps_and_preemptions(bound)
    assert (first["a"], first["b"], num_preemptions) == (0, b_first_step, preemptions)


def first_step_of_a_newcomer(bound: BlockBound) -> int:
    """Full attention, 4-token blocks, 10 usable blocks, 16 tokens a step, 8 per request (T).
    a (prompt 4, output 8) runs alone and finishes: the mean output is 8. Then b (prompt 4,
    output 8) runs one step; c (prompt 28: 7 blocks, output 1) arrives. Returns c's first step."""
    layout = make_layout([make_group(FULL, 4)], [11], max_model_len=64, in_flight_tokens=8)
    layout = replace(layout, groups=tuple(replace(g, bound=bound) for g in layout.groups))
    kv = KVCacheManager(layout, CacheConfig(enable_caching=False))
    scheduler = Scheduler(kv, SchedulerConfig(max_num_batched_tokens=16, max_num_seqs=4))
    first: dict[str, int] = {}

    def step() -> None:
        output = scheduler.schedule()
        for entry in output.scheduled:
            first.setdefault(entry.request_id, output.step_id)
        scheduler.update_from_output(output, {e.request_id: 7 for e in output.scheduled if e.emits_token})
        kv.check_integrity()

    scheduler.add_request(Request("a", list(range(4)), 8))
    while scheduler.has_unfinished_requests:
        step()
    scheduler.add_request(Request("b", list(range(10, 14)), 8))
    step()
    scheduler.add_request(Request("c", list(range(100, 128)), 1))
    while scheduler.has_unfinished_requests:
        step()
    assert scheduler.num_preemptions == 0
    return first["c"] - first["b"]


def test_decoding_requests_keep_their_expected_growth_free():
    # vLLM's gate, one step after b started: b holds 2 blocks (8 free), c's 7 fit.
    assert first_step_of_a_newcomer(BlockBound.VLLM) == 1
    # Exact bounds: b has computed 4 tokens, generated 1, expects 8 - 1 = 7 more: blocks
    # cdiv(4 + 7, 4) - cdiv(4, 4) = 2; 7 + 2 > 8 free, c waits. Next step b has computed 5,
    # generated 2: cdiv(5 + 6, 4) - cdiv(5, 4) = 1; 7 + 1 <= 8, c starts.
    assert first_step_of_a_newcomer(BlockBound.EXACT) == 2
