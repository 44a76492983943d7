"""The hkv layout's admission gate (exact bounds) counts the blocks running requests take next:
the prompt blocks of requests still in prefill (hand-traced against vLLM's gate)."""

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
