"""The roofline step time, checked by hand (figures are spec-sheet style round numbers)."""

import pytest
from rt_layouts import FULL, RECURRENT, SLIDING, make_group, make_layout

from hkv.runtime.simulation.metrics.kv_read import KvReadModel
from hkv.runtime.simulation.metrics.step_cost import StepCost

H100_BYTES_PER_S = 3.35e12
H100_FLOPS = 989e12


def _dense(weight_bytes: int, flops_per_token: float) -> StepCost:
    return StepCost("h100", H100_BYTES_PER_S, H100_FLOPS, weight_bytes, 0, 0, 0, flops_per_token)


def test_a_decode_step_reads_the_weights_once() -> None:
    cost = _dense(16 * 10**9, 2 * 8e9)
    # 16 GB at 3.35 TB/s = 4.776 ms; one token's 16 GFLOP at 989 TFLOPS is 0.016 ms
    assert cost.step_s(1, 0.0) == pytest.approx(4.776e-3, rel=1e-3)
    # plus 1 GB of KV: 17 GB / 3.35 TB/s = 5.075 ms
    assert cost.step_s(1, 1e9) == pytest.approx(5.075e-3, rel=1e-3)


def test_a_long_prefill_is_compute_bound() -> None:
    cost = _dense(16 * 10**9, 2 * 8e9)
    # 8,192 tokens x 16 GFLOP = 131 TFLOP at 989 TFLOPS = 132.5 ms > 4.8 ms of reads
    assert cost.step_s(8192, 0.0) == pytest.approx(132.5e-3, rel=1e-3)
    assert cost.compute_s(8192) > cost.memory_s(8192, 0.0)


def test_moe_reads_the_experts_a_batch_touches() -> None:
    # 4 experts, 2 per token: one token touches half of them, two tokens 1 - (1/2)^2 = 3/4
    cost = StepCost("h100", 1e12, H100_FLOPS, 1_000, 4_000, 4, 2, 1.0)
    assert cost.weight_read_bytes(1) == 1_000 + 2_000
    assert cost.weight_read_bytes(2) == 1_000 + 3_000
    assert cost.weight_read_bytes(0) == 1_000


def test_overhead_adds_to_the_longer_side() -> None:
    cost = StepCost("h100", H100_BYTES_PER_S, H100_FLOPS, 16 * 10**9, 0, 0, 0, 0.0, overhead_s=0.002)
    assert cost.step_s(1, 0.0) == pytest.approx(6.776e-3, rel=1e-3)


def test_kv_read_model_from_a_layout() -> None:
    # make_group: 1 KV head, head_dim 8 + 8, 2 bytes = 32 bytes per token per layer; block 4 tokens
    # = 128-byte pages. The mamba2 state: 4 x 8 x 2 bytes = 64 bytes.
    layout = make_layout([make_group(FULL, 4), make_group(SLIDING, 4, window=8), make_group(RECURRENT, 4)],
                         [40], max_model_len=64)
    model = KvReadModel.from_layout(layout, [0])
    assert model.full_bytes_per_token == 32.0
    assert model.window_groups == ((0, 1, 128),)
    assert model.state_bytes_per_request == 2 * 64  # read and written
    # 3 requests attending to 100 tokens in all, the sliding group holding 6 blocks
    assert model.read_bytes(100, [[9, 6, 3]], 3) == 100 * 32 + 6 * 128 + 3 * 128
