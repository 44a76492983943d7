"""The KV cache budget of one rank: GPU total x utilization - weights - runtime overhead.

vLLM measures the non-KV memory with a profiling run; a planner cannot, so the overhead here is
an estimate (documented in the README) unless `--available-kv-memory` gives the budget exactly:

    activation  = max_num_batched_tokens x (4 x hidden + 2 x intermediate / TP) x dtype bytes
                  + min(max_num_batched_tokens, max_num_seqs) x vocab x 4      (fp32 logits)
    cudagraphs  = 0.5 GiB     (vLLM's cudagraph memory estimate is typically 0.2-1 GiB)
    non-torch   = 0.4 GiB     (CUDA context, NCCL, allocator slack; vLLM logs 0.3-0.4 GiB)
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from math import ceil

from hkv.model_specs.model_spec import ModelSpec
from hkv.planner.errors import DoesNotFitError, InvalidInputError
from hkv.planner.gpus import GIB, NO_GPU_MAX_NUM_BATCHED_TOKENS, default_max_num_batched_tokens, get_gpu
from hkv.planner.plan_config import PlanConfig, dtype_bytes
from hkv.planner.sizes import format_gib

CUDAGRAPH_BYTES = GIB // 2
NON_TORCH_BYTES = int(0.4 * GIB)


@dataclass(frozen=True)
class MemoryBudget:
    """Bytes per rank. `exact` is True when the user gave the KV budget directly."""

    device: str
    total_bytes: int
    gpu_memory_utilization: float
    weights_bytes: int
    activation_bytes: int
    cudagraph_bytes: int
    non_torch_bytes: int
    available_bytes: int
    max_num_batched_tokens: int
    exact: bool
    shortfall_bytes: int = 0  # > 0: weights and overhead exceed the GPU; available is then 0

    @property
    def fits(self) -> bool:
        return self.shortfall_bytes == 0

    @property
    def requested_bytes(self) -> int:
        return ceil(self.total_bytes * self.gpu_memory_utilization)


def resolve_max_num_batched_tokens(cfg: PlanConfig) -> int:
    if cfg.max_num_batched_tokens is not None:
        return cfg.max_num_batched_tokens
    if cfg.gpu_memory_bytes is not None:
        return default_max_num_batched_tokens(cfg.gpu_memory_bytes, is_a100=False)
    if cfg.gpu is None:
        return NO_GPU_MAX_NUM_BATCHED_TOKENS
    gpu = get_gpu(cfg.gpu)
    return default_max_num_batched_tokens(gpu.total_bytes, gpu.is_a100)


def compute_memory_budget(model: ModelSpec, cfg: PlanConfig) -> MemoryBudget:
    """The budget; when weights and overhead exceed the GPU, available is 0 and shortfall > 0."""
    mnbt = resolve_max_num_batched_tokens(cfg)
    if cfg.gpu_memory_bytes is not None:
        device, total = "custom", cfg.gpu_memory_bytes
    elif cfg.gpu is not None:
        gpu = get_gpu(cfg.gpu)
        device, total = gpu.name, gpu.total_bytes
    elif cfg.available_kv_memory_bytes is None:
        raise InvalidInputError("give gpu, gpu_memory_bytes or available_kv_memory_bytes",
                                fields=("gpu", "gpu_memory_bytes", "available_kv_memory_bytes"))
    else:
        device, total = "custom", 0
    ranks = cfg.tp * cfg.pp
    weight_dtype = dtype_bytes("dtype", cfg.dtype)
    weights = model.weights_bytes if weight_dtype is None else model.num_params * weight_dtype
    weights_per_rank = ceil(weights / ranks)
    act_dtype = weight_dtype or model.dtype_bytes
    activation = (mnbt * (4 * model.hidden_size + 2 * model.intermediate_size // cfg.tp) * act_dtype
                  + min(mnbt, cfg.max_num_seqs) * model.vocab_size * 4)
    if cfg.available_kv_memory_bytes is not None:
        return MemoryBudget(device, total, cfg.gpu_memory_utilization, weights_per_rank, activation,
                            CUDAGRAPH_BYTES, NON_TORCH_BYTES, cfg.available_kv_memory_bytes, mnbt, True)
    requested = ceil(total * cfg.gpu_memory_utilization)
    available = requested - weights_per_rank - activation - CUDAGRAPH_BYTES - NON_TORCH_BYTES
    return MemoryBudget(device, total, cfg.gpu_memory_utilization, weights_per_rank, activation,
                        CUDAGRAPH_BYTES, NON_TORCH_BYTES, max(0, available), mnbt, False,
                        shortfall_bytes=max(0, -available))


def smallest_fitting_tp(model: ModelSpec, cfg: PlanConfig, tp_choices: tuple[int, ...] = (1, 2, 4, 8)) -> int | None:
    """The smallest tensor-parallel size in `tp_choices` whose budget fits the weights (cfg's
    other settings kept); None when none does. Pure."""
    return next((tp for tp in tp_choices if compute_memory_budget(model, replace(cfg, tp=tp)).fits), None)


def does_not_fit_error(model: ModelSpec, budget: MemoryBudget) -> DoesNotFitError:
    """The one-line error for a budget whose weights and overhead exceed the GPU (not budget.fits)."""
    overhead = budget.activation_bytes + budget.cudagraph_bytes + budget.non_torch_bytes
    return DoesNotFitError(
        f"{model.name} does not fit: {format_gib(budget.weights_bytes)} of weights per GPU plus about "
        f"{format_gib(overhead)} of runtime overhead exceed {format_gib(budget.requested_bytes)} "
        f"({budget.gpu_memory_utilization:g} x {format_gib(budget.total_bytes)} on {budget.device}); "
        f"short by {format_gib(budget.shortfall_bytes)}: raise tp/pp or use a larger GPU",
        fields=("tp", "pp"))
