"""vLLM's memory profile of one rank: what its profile run and CUDA graphs take besides weights.

Today's estimate (one formula for every release):
    activation  = max_num_batched_tokens x (4 x hidden + 2 x intermediate / TP) x dtype bytes
                  + min(max_num_batched_tokens, max_num_seqs) x vocab x 4      (fp32 logits)
    cudagraph   = 0.5 GiB, only where the release subtracts its estimate and graphs are captured
    non-torch   = 0.4 GiB
"""

from __future__ import annotations

from hkv.model_specs.model_spec import ModelSpec
from hkv.planner.budget.budget_term import BudgetTerm
from hkv.planner.budget.gpu_table import GIB
from hkv.planner.plan_config import PlanConfig, dtype_bytes

CUDAGRAPH_BYTES = GIB // 2
NON_TORCH_BYTES = int(0.4 * GIB)


def profile_terms(model: ModelSpec, cfg: PlanConfig, max_num_batched_tokens: int) -> tuple[BudgetTerm, ...]:
    """The activation, cudagraph and non_torch terms of one rank (in that order)."""
    act_dtype = dtype_bytes("dtype", cfg.dtype) or model.dtype_bytes
    mnbt = max_num_batched_tokens
    activation = (mnbt * (4 * model.hidden_size + 2 * model.intermediate_size // cfg.tp) * act_dtype
                  + min(mnbt, cfg.max_num_seqs) * model.vocab_size * 4)
    graphs = cfg.vllm_rules().subtracts_cudagraph_estimate and not cfg.enforce_eager
    return (
        BudgetTerm.banded("activation", activation, "estimate", 0.5, 1.0, "profile run peak (estimate)"),
        BudgetTerm.banded("cudagraph", CUDAGRAPH_BYTES if graphs else 0, "estimate", 0.6, 2.0,
                          "CUDA graph estimate" if graphs else "not subtracted by this release / eager"),
        BudgetTerm.banded("non_torch", NON_TORCH_BYTES, "estimate", 0.8, 3.0, "CUDA context, NCCL (estimate)"),
    )
