"""Sustained concurrency measured through the real scheduler and pools (hand-traced tiny layouts)."""

import pytest
from rt_layouts import FULL, SLIDING, make_group, make_layout

from hkv.planner.capacity.sustained import SustainedSetup
from hkv.runtime.simulation.sustained_probe import measure_sustained, run_together


def test_last_token_is_never_computed_so_full_attention_needs_cdiv_l_minus_1():
    # One full group, block 4, max_model_len 17: output 17 // 8 = 2, prompt 15.
    # Per request: prefill 15 tokens -> cdiv(15, 4) = 4 blocks; the one decode step computes
    # token 15 -> slots for 16 tokens -> still 4 blocks; then the 2nd output token is sampled and
    # the request finishes (token 16 is never computed). The gate charges cdiv(17, 4) = 5.
    # Pool: 13 blocks, 12 usable -> 12 // 5 = 2 by the gate, 12 // 4 = 3 really.
    # N = 3, budget 64: step 0 admits all three (45 tokens, 12 blocks, free 0); step 1 each
    # decodes within its 4th block; all finish. N = 4: the 4th's chunk (4 blocks) never fits
    # while the others run, so it waits: not all at once (no preemption either).
    layout = make_layout([make_group(FULL, 4)], [13], max_model_len=17, in_flight_tokens=64)
    assert layout.max_num_requests(17) == 2
    setup = SustainedSetup(max_num_batched_tokens=64, max_num_seqs=16)
    result = measure_sustained(layout, setup)
    assert result.sustained == 3
    assert result.next_trial is not None
    assert (result.next_trial.num_preemptions, result.next_trial.peak_running) == (0, 3)
    assert result.next_trial.num_finished == 4


def test_growth_past_the_pool_preempts_the_newest():
    # One full group, block 4, max_model_len 16, output 8: prompt 8 (2 blocks), grows to
    # slots for 15 tokens (cdiv(15, 4) = 4 blocks). Pool 13 blocks, 12 usable, budget 64.
    # N = 4: step 0 admits all (4 x 2 = 8 blocks, free 4). The decode of token 8 (slots 9) takes a
    # 3rd block each (free 0). The decode of token 12 (slots 13) needs a 4th: r0 finds none,
    # the newest (r3, 3 blocks) is preempted; r0, r1, r2 take one each (free 0). r3 waits until
    # the others finish and then runs alone: 1 preemption in all. N = 3 uses 12 blocks: clean.
    layout = make_layout([make_group(FULL, 4)], [13], max_model_len=16, in_flight_tokens=64)
    setup = SustainedSetup(max_num_batched_tokens=64, max_num_seqs=16, output_len=8)
    trial = run_together(layout, 4, setup)
    assert (trial.num_preemptions, trial.peak_running, trial.num_finished) == (1, 4, 4)
    result = measure_sustained(layout, setup)
    assert result.sustained == 3 and result.next_trial == trial


def test_sliding_window_releases_let_more_run_than_the_gate():
    # One sliding group, block 4, window 4, max_model_len 16, output 8, prompt 8, budget 64.
    # A request prefills 8 tokens (2 blocks); from then on it holds the window's block plus the
    # one its decode token lands in: after release to c computed tokens it keeps
    # cdiv(c, 4) - (c - 3) // 4 blocks (1 or 2), then allocates slot c + 1: at most 2 blocks.
    # Pool 9 blocks, 8 usable -> 4 requests of 2 blocks, while the gate (in-flight 64) charges
    # cdiv(min(3 + 64, 16), 4) + 1 = 5 blocks: 8 // 5 = 1.
    # N = 4: step 0: 4 x 2 = 8 blocks, free 0. Decode of token 8 (c = 8): release to
    # cdiv(8, 4) - 5 // 4 = 1 block, then slots 9 -> 3 - 1 = 2 blocks: each request frees one
    # before it takes one, so the pool never runs dry. N = 5: the 5th waits in step 0 (free 0).
    # Decode at c = 11 (slots 12): release to cdiv(11, 4) - 8 // 4 = 1 block, need
    # cdiv(12, 4) - 2 = 1: each of the 4 frees one -> free 4, and the 5th is admitted (2 blocks,
    # free 2). Decode at c = 12 (slots 13): cdiv(13, 4) - 9 // 4 = 2 blocks, one more each: r0
    # (free 1), r1 (free 0), r2 finds none -> the newest (the 5th) is preempted.
    layout = make_layout([make_group(SLIDING, 4, window=4)], [9], max_model_len=16, in_flight_tokens=64)
    assert layout.max_num_requests(16) == 1
    setup = SustainedSetup(max_num_batched_tokens=64, max_num_seqs=16, output_len=8)
    result = measure_sustained(layout, setup)
    assert result.sustained == 4
    assert result.next_trial is not None
    assert (result.next_trial.num_preemptions, result.next_trial.peak_running) == (1, 5)


def test_capped_by_max_num_seqs():
    layout = make_layout([make_group(FULL, 4)], [101], max_model_len=16, in_flight_tokens=64)
    result = measure_sustained(layout, SustainedSetup(max_num_batched_tokens=64, max_num_seqs=3))
    assert (result.sustained, result.next_trial) == (3, None)


def test_output_len_must_leave_a_prompt():
    layout = make_layout([make_group(FULL, 4)], [13], max_model_len=16)
    with pytest.raises(ValueError, match="output_len"):
        run_together(layout, 1, SustainedSetup(64, 4, output_len=16))
