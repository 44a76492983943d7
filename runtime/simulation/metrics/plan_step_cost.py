"""The StepCost of a plan: its GPU's spec-sheet figures, its weights per rank, its model's
active parameters. None (with the reason) where the roofline has no inputs, and the simulator
keeps its fixed step model."""

from __future__ import annotations

from hkv.model_specs.model_spec import ModelSpec
from hkv.planner.budget.gpu_table import get_gpu
from hkv.planner.errors import InvalidInputError
from hkv.planner.plan import Plan
from hkv.runtime.simulation.metrics.step_cost import StepCost

_EXPERT_ROLES = ("experts_w13", "experts_w2")


def step_cost_for_plan(the_plan: Plan) -> tuple[StepCost | None, str]:
    """(StepCost, "") or (None, why the fixed model stays)."""
    device = the_plan.budget.device
    try:
        gpu = get_gpu(device)
    except InvalidInputError:
        return None, f"no GPU in the table for device {device!r} (--gpu-memory gives no bandwidth)"
    tflops = gpu.dense_bf16_tflops
    if tflops is None:
        return None, f"the GPU table has no dense BF16 throughput for {gpu.name}"
    cfg = the_plan.config
    ranks = cfg.tp * cfg.pp
    active, experts, num_experts = _matmul_params(the_plan.model)
    weights = the_plan.budget.weights_bytes
    total = max(1, the_plan.model.num_params)
    expert_bytes = weights * experts // total if num_experts else 0
    return StepCost(
        gpu=gpu.name,
        hbm_bytes_per_s=gpu.hbm_bandwidth_gbps * 1e9,
        dense_flops_per_s=tflops * 1e12,
        dense_weight_bytes=weights - expert_bytes,
        expert_weight_bytes=expert_bytes,
        num_experts=num_experts,
        experts_per_token=the_plan.model.num_experts_per_tok if num_experts else 0,
        flops_per_token=2.0 * active / ranks,
    ), ""


def _matmul_params(model: ModelSpec) -> tuple[int, int, int]:
    """(active matmul parameters per token, routed-expert parameters, experts per layer) of the
    language model. Routed experts count k/E of their weights (k experts per token of E); a tied
    output projection counts its embedding. Without an exact breakdown: every parameter, no
    experts (an overestimate for MoE models)."""
    breakdown = model.param_breakdown
    if breakdown is None or not breakdown.exact:
        return model.num_params, 0, 0
    k = model.num_experts_per_tok
    active = 0
    experts = 0
    num_experts = 0
    has_head = False
    for w in breakdown.linears:
        if w.part != "language_model":
            continue
        if w.role in _EXPERT_ROLES and k:
            experts += w.num_params
            num_experts = w.count
            active += w.num_params * k // w.count
        else:
            active += w.num_params
        has_head = has_head or w.role == "lm_head"
    if not has_head:  # tied: the input embedding is also the output projection
        active += sum(d.numel for d in breakdown.dense if d.part == "language_model" and d.parallel == "vocab")
    return active, experts, num_experts
