"""Weight bytes per rank, as vLLM loads them.

Today: the checkpoint's bytes (safetensors headers when at hand, else the config's parameter count
and quantization) divided evenly over tp x pp ranks; `cfg.weights_bytes` overrides.
"""

from __future__ import annotations

from math import ceil

from hkv.model_specs.model_spec import ModelSpec
from hkv.planner.budget.budget_term import BudgetTerm
from hkv.planner.plan_config import PlanConfig, dtype_bytes


def weights_term(model: ModelSpec, cfg: PlanConfig) -> BudgetTerm:
    """The "weights" term of one rank."""
    if cfg.weights_bytes is not None:
        return BudgetTerm.exact("weights", cfg.weights_bytes, "given", "weights per rank given by hand")
    ranks = cfg.tp * cfg.pp
    weight_dtype = dtype_bytes("dtype", cfg.dtype)
    if weight_dtype is not None:
        per_rank = ceil(model.num_params * weight_dtype / ranks)
        return BudgetTerm.banded("weights", per_rank, "config", 0.02, 0.02,
                                 f"{model.num_params:,} parameters x {weight_dtype} bytes / {ranks} ranks")
    per_rank = ceil(model.weights_bytes / ranks)
    if model.weights_bytes_exact is not None:
        return BudgetTerm.exact("weights", per_rank, "header", f"safetensors headers / {ranks} ranks")
    return BudgetTerm.banded("weights", per_rank, "config", 0.02, 0.02, f"config / {ranks} ranks")
