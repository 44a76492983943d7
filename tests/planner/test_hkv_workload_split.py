"""The hkv layout sized for a workload: the split length from its lengths, the state pool's
checkpoints (hand calculations)."""

import pytest
from toy_models import granite4_like

from hkv.planner.budget.memory_budget import compute_memory_budget
from hkv.planner.errors import InvalidInputError
from hkv.planner.hkv_layout import checkpoint_grid_len, checkpoints_per_request
from hkv.planner.plan import build_layout
from hkv.planner.plan_config import PlanConfig
from hkv.planner.capacity.workload_lengths import WorkloadLengths, sized_for_workload, split_len_of

GIB = 2**30


def test_split_len_is_the_mean_request_length():
    # (100 + 20 + 300 + 40 + 1 + 1) / 3 = 154
    lengths = WorkloadLengths.of([(100, 20), (300, 40), (1, 1)])
    assert (lengths.num_requests, lengths.prompt_tokens, lengths.output_tokens) == (3, 401, 61)
    assert lengths.split_len(max_model_len=4096) == 154
    assert split_len_of(iter([(100, 20), (300, 40), (1, 1)]), 4096) == 154
    assert lengths.split_len(max_model_len=128) == 128  # never past max_model_len


def test_a_given_expected_length_wins_over_the_workload():
    assert sized_for_workload(PlanConfig(), [(100, 20), (300, 40)], 4096).expected_avg_seq_len == 230
    given = PlanConfig(expected_avg_seq_len=1000)
    assert sized_for_workload(given, [(100, 20)], 4096) is given


def test_a_workload_without_requests_is_refused():
    with pytest.raises(InvalidInputError, match="expected_avg_seq_len"):
        split_len_of([], 4096)


def test_checkpoint_grid_and_checkpoints_per_request():
    assert checkpoint_grid_len(8192, 16) == 8192
    assert checkpoint_grid_len(100, 16) == 96  # rounded down to state boundaries
    assert checkpoint_grid_len(8, 16) == 16  # at least one boundary
    # Mooncake's mean, 12,378 tokens: one grid checkpoint (8,192) + the hit point.
    assert checkpoints_per_request(12_378, 8192) == 2
    assert checkpoints_per_request(1_366, 8192) == 1


def test_workload_sized_state_pool_keeps_each_requests_checkpoints():
    cfg = PlanConfig(available_kv_memory_bytes=20 * GIB, max_num_batched_tokens=8192, expected_avg_seq_len=4096)
    model = granite4_like()
    hkv = build_layout("hkv", model, cfg, compute_memory_budget(model, cfg))
    attention_pool, state_pool = hkv.pools
    # By hand (block sizes as in test_hkv_layout.test_state_pool_split_is_balanced_at_max_len):
    #   attention block 262,144 B, a 4,096-token request holds 256; state block 77,322,240 B, a
    #   request holds its live state + 4,096 // 8,192 + 1 = 1 checkpoint: 2 blocks.
    #   per request 256 x 262,144 + 2 x 77,322,240 = 221,753,344 B; null blocks 77,584,384 B;
    #   n = (21,474,836,480 - 77,584,384) // 221,753,344 = 96 (96.49).
    #   state pool: 2 x 96 + 1 null = 193 blocks; attention: (21,474,836,480 - 193 x 77,322,240)
    #   // 262,144 = 24,992 blocks (24,992.5).
    assert (attention_pool.num_blocks, state_pool.num_blocks) == (24_992, 193)
    assert any("1 cached checkpoint" in note for note in hkv.notes)
    # without prefix caching no checkpoint is kept: 1 block per request, n = (21,474,836,480 -
    # 77,584,384) // (256 x 262,144 + 77,322,240) = 148 (148.5), + 1 null block
    off = PlanConfig(available_kv_memory_bytes=20 * GIB, max_num_batched_tokens=8192, expected_avg_seq_len=4096,
                     enable_prefix_caching=False)
    assert build_layout("hkv", model, off, compute_memory_budget(model, off)).pools[1].num_blocks == 149
