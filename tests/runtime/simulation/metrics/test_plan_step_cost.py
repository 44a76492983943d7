"""A plan's StepCost: its GPU's table figures, its weights per rank, its active parameters; the
fixed model stays where the table has no figure."""

import pytest

from hkv.model_specs.resolve import load_model_spec
from hkv.planner.plan import plan
from hkv.planner.plan_config import PlanConfig
from hkv.runtime.simulation.metrics.plan_step_cost import step_cost_for_plan


@pytest.fixture(scope="module")
def qwen3_next_plan():
    return plan(load_model_spec("qwen3-next-80b-a3b"), PlanConfig(gpu="h100", tp=4, max_num_seqs=256))


def test_moe_model_on_h100(qwen3_next_plan) -> None:
    cost, why = step_cost_for_plan(qwen3_next_plan)
    assert cost is not None and why == ""
    assert (cost.hbm_bytes_per_s, cost.dense_flops_per_s) == (3350e9, 989e12)  # H100 SXM spec sheet
    assert cost.dense_weight_bytes + cost.expert_weight_bytes == qwen3_next_plan.budget.weights_bytes
    # the model card: 80B parameters, about 3B activated per token, 512 experts of which 10 routed
    # per token; experts hold almost all weights. FLOPs per token per rank: 2 x active / 4 ranks.
    assert (cost.num_experts, cost.experts_per_token) == (512, 10)
    assert 1.5e9 <= cost.flops_per_token <= 2.0e9
    assert cost.expert_weight_bytes > 0.9 * qwen3_next_plan.budget.weights_bytes


def test_dense_model_counts_its_parameters_once_per_token() -> None:
    the_plan = plan(load_model_spec("gemma-3-27b"), PlanConfig(gpu="h200", tp=2, max_num_seqs=256))
    cost, _ = step_cost_for_plan(the_plan)
    assert cost is not None and cost.num_experts == 0 and cost.expert_weight_bytes == 0
    assert cost.hbm_bytes_per_s == 4800e9
    assert 2 * 26e9 / 2 <= cost.flops_per_token <= 2 * 28e9 / 2  # a 27B language model over 2 ranks


def test_no_flops_figure_keeps_the_fixed_model() -> None:
    the_plan = plan(load_model_spec("gemma-3-1b-it"), PlanConfig(gpu="t4", max_num_seqs=16))
    cost, why = step_cost_for_plan(the_plan)
    assert cost is None and "t4" in why


def test_a_custom_memory_size_has_no_bandwidth() -> None:
    the_plan = plan(load_model_spec("gemma-3-1b-it"), PlanConfig(gpu_memory_bytes=24 * 2**30, max_num_seqs=16))
    cost, why = step_cost_for_plan(the_plan)
    assert cost is None and "--gpu-memory" in why
