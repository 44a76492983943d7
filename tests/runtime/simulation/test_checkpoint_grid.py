"""One-live-state recurrent groups (hkv, partitioned): checkpoints on the step-budget grid and at
hit points only, and steps that stop at the full-attention junction (hand-traced)."""

from __future__ import annotations

from hkv.runtime import CacheConfig, KVCacheManager, Request, Scheduler, SchedulerConfig
from rt_layouts import FULL, RECURRENT, make_group, make_layout


def run(requests: list[Request], num_state_blocks: int = 1) -> tuple[KVCacheManager, dict[str, list[int]]]:
    """Full (block 4) + recurrent (block 4) in one pool of 64 blocks; budget 16 tokens a step, so
    the grid is 16 tokens. Runs the requests one after another; returns the manager and each
    request's scheduled token counts, step by step."""
    layout = make_layout([make_group(FULL, 4), make_group(RECURRENT, 4, num_state_blocks=num_state_blocks)],
                         [64], max_model_len=64, in_flight_tokens=16)
    kv = KVCacheManager(layout, CacheConfig())
    scheduler = Scheduler(kv, SchedulerConfig(max_num_batched_tokens=16, max_num_seqs=1))
    chunks: dict[str, list[int]] = {}
    for request in requests:
        scheduler.add_request(request)
        while scheduler.has_unfinished_requests:
            output = scheduler.schedule()
            for entry in output.scheduled:
                chunks.setdefault(entry.request_id, []).append(len(entry.positions))
            scheduler.update_from_output(output, {e.request_id: 7 for e in output.scheduled if e.emits_token})
            kv.check_integrity()
    return kv, chunks


def test_a_step_stops_at_the_junction_and_leaves_the_checkpoint_there() -> None:
    # a: 24 prompt tokens in steps 0-16 (grid), 16-24; checkpoints at 16 (grid) and 24 (prompt end).
    a = Request("a", list(range(100, 124)), 1)
    # b shares a's first 12 tokens: full attention hits 12 (the junction), the hybrid hit 0 (no
    # checkpoint at 4, 8 or 12). b's first step stops at 12, the next at 16 (the grid), then 16-32.
    b = Request("b", [*range(100, 112), *range(200, 220)], 1)
    kv, chunks = run([a, b])
    assert chunks["b"][:3] == [12, 4, 16]
    # c shares the same 12 tokens: it hits them (the checkpoint b left at the junction).
    c = Request("c", [*range(100, 112), *range(300, 310)], 1)
    assert kv.get_computed_blocks(c).num_tokens == 12


def test_decode_boundaries_off_the_grid_are_not_checkpointed() -> None:
    # a: prompt 8, 12 output tokens: its state passes 12, 16 and 20 while decoding. Kept: 8 (the
    # prompt's end) and 16 (the grid); not 12.
    a = Request("a", list(range(100, 108)), 12)
    kv, _ = run([a])
    tokens = list(a.token_ids)
    assert kv.get_computed_blocks(Request("x", [*tokens[:13], 999], 1)).num_tokens == 8
    assert kv.get_computed_blocks(Request("y", [*tokens[:17], 999], 1)).num_tokens == 16


def test_vllm_style_state_blocks_keep_a_checkpoint_at_every_chunk_end() -> None:
    # Two state blocks per request (vLLM's align mode): no grid, the 12-token boundary is kept.
    a = Request("a", list(range(100, 108)), 12)
    kv, _ = run([a], num_state_blocks=2)
    tokens = list(a.token_ids)
    assert kv.get_computed_blocks(Request("x", [*tokens[:13], 999], 1)).num_tokens == 12
