"""The KV cache budget of one rank: GPU total x utilization - weights - the profile's terms.

vLLM measures the non-KV memory with a profiling run; a planner cannot, so each term says where it
came from (budget_term.py) and the budget carries the band the terms span. With
`--available-kv-memory` the budget is given and exact.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from math import ceil

from hkv.model_specs.model_spec import ModelSpec
from hkv.planner.budget.budget_term import BudgetTerm
from hkv.planner.budget.gpu_table import (NO_GPU_MAX_NUM_BATCHED_TOKENS, default_max_num_batched_tokens,
                                          default_max_num_seqs, get_gpu)
from hkv.planner.plan_config import DEFAULT_MAX_NUM_SEQS
from hkv.planner.budget.profile import profile_terms
from hkv.planner.budget.weights import weights_term
from hkv.planner.errors import DoesNotFitError, InvalidInputError
from hkv.planner.plan_config import PlanConfig
from hkv.planner.sizes import format_gib


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
    max_num_seqs: int = DEFAULT_MAX_NUM_SEQS  # resolved: the given one, else vLLM's for the GPU class
    shortfall_bytes: int = 0  # > 0: weights and overhead exceed the GPU; available is then 0
    terms: tuple[BudgetTerm, ...] = ()  # weights first, then the profile's terms
    available_low_bytes: int | None = None  # the band of available (None: equal to available)
    available_high_bytes: int | None = None

    @property
    def fits(self) -> bool:
        return self.shortfall_bytes == 0

    @property
    def fit_verdict(self) -> str:
        """"fits", "may not fit" (the estimate or the band's low end is short, its high end is not)
        or "does not fit" (short even at the band's high end; for an exact budget: short)."""
        low, high = self.available_band
        if self.exact or low == high:
            return "fits" if self.fits else "does not fit"
        if high == 0:
            return "does not fit"
        return "fits" if self.fits and low > 0 else "may not fit"

    @property
    def requested_bytes(self) -> int:
        return ceil(self.total_bytes * self.gpu_memory_utilization)

    @property
    def available_band(self) -> tuple[int, int]:
        """[low, high] bytes the available KV memory may really be; one value when exact."""
        low = self.available_bytes if self.available_low_bytes is None else self.available_low_bytes
        high = self.available_bytes if self.available_high_bytes is None else self.available_high_bytes
        return low, high

    def term(self, name: str) -> BudgetTerm | None:
        return next((t for t in self.terms if t.name == name), None)


def _device(cfg: PlanConfig) -> tuple[str, int, bool] | None:
    """(name, total bytes, kept on vLLM's small batch defaults) of the device: --gpu-memory's size,
    else the GPU table's entry; None when neither is given."""
    if cfg.gpu_memory_bytes is not None:
        return "custom", cfg.gpu_memory_bytes, False
    if cfg.gpu is None:
        return None
    gpu = get_gpu(cfg.gpu)
    return gpu.name, gpu.total_bytes, gpu.small_batch_tier(cfg.vllm_rules().gb10_small_batch_tier)


def resolve_max_num_batched_tokens(cfg: PlanConfig) -> int:
    if cfg.max_num_batched_tokens is not None:
        return cfg.max_num_batched_tokens
    device = _device(cfg)
    if device is None:
        return NO_GPU_MAX_NUM_BATCHED_TOKENS
    return default_max_num_batched_tokens(*device[1:], large_tier=cfg.vllm_rules().large_gpu_batch_tier)


def resolve_max_num_seqs(cfg: PlanConfig) -> int:
    if cfg.max_num_seqs is not None:
        return cfg.max_num_seqs
    device = _device(cfg)
    return DEFAULT_MAX_NUM_SEQS if device is None else default_max_num_seqs(*device[1:])


def _device_total(cfg: PlanConfig) -> tuple[str, int]:
    device = _device(cfg)
    if device is not None:
        return device[0], device[1]
    if cfg.available_kv_memory_bytes is None:
        raise InvalidInputError("give gpu, gpu_memory_bytes or available_kv_memory_bytes",
                                fields=("gpu", "gpu_memory_bytes", "available_kv_memory_bytes"))
    return "custom", 0


def compute_memory_budget(model: ModelSpec, cfg: PlanConfig) -> MemoryBudget:
    """The budget; when weights and overhead exceed the GPU, available is 0 and shortfall > 0."""
    mnbt = resolve_max_num_batched_tokens(cfg)
    max_num_seqs = resolve_max_num_seqs(cfg)
    device, total = _device_total(cfg)
    utilization = cfg.utilization()
    weights = weights_term(model, cfg)
    profile = profile_terms(model, replace(cfg, max_num_seqs=max_num_seqs), mnbt)
    terms = (weights, *profile)
    named = {t.name: t.bytes for t in profile}
    fixed = dict(activation_bytes=named.get("activation", 0), cudagraph_bytes=named.get("cudagraph", 0),
                 non_torch_bytes=named.get("non_torch", 0))
    if cfg.available_kv_memory_bytes is not None:
        return MemoryBudget(device, total, utilization, weights.bytes, available_bytes=cfg.available_kv_memory_bytes,
                            max_num_batched_tokens=mnbt, exact=True, terms=terms, max_num_seqs=max_num_seqs,
                            **fixed)
    requested = ceil(total * utilization)
    available = requested - sum(t.bytes for t in terms)
    low = max(0, requested - sum(t.high_bytes for t in terms))
    high = max(0, requested - sum(t.low_bytes for t in terms))
    return MemoryBudget(device, total, utilization, weights.bytes, available_bytes=max(0, available),
                        max_num_batched_tokens=mnbt, exact=False, shortfall_bytes=max(0, -available),
                        max_num_seqs=max_num_seqs,
                        terms=terms, available_low_bytes=min(low, max(0, available)),
                        available_high_bytes=max(high, max(0, available)), **fixed)


def smallest_fitting_tp(model: ModelSpec, cfg: PlanConfig, tp_choices: tuple[int, ...] = (1, 2, 4, 8)) -> int | None:
    """The smallest tensor-parallel size in `tp_choices` whose budget fits the weights (cfg's
    other settings kept); None when none does. Pure."""
    return next((tp for tp in tp_choices if compute_memory_budget(model, replace(cfg, tp=tp)).fits), None)


def fit_warning(model: ModelSpec, budget: MemoryBudget) -> DoesNotFitError | None:
    """The warning for a budget that may not fit or does not fit (its fields name the options
    that help); None when it fits."""
    verdict = budget.fit_verdict
    if verdict == "fits":
        return None
    if verdict == "does not fit":
        return does_not_fit_error(model, budget)
    low, high = budget.available_band
    estimate = (f"the estimate is short by {format_gib(budget.shortfall_bytes)}" if not budget.fits
                else f"the estimate leaves {format_gib(budget.available_bytes)}")
    return DoesNotFitError(
        f"{model.name} may not fit: {estimate} for the KV cache, and the overhead band puts it between "
        f"{format_gib(low)} and {format_gib(high)} on {budget.device}; vLLM's profile run decides "
        "(pass available_kv_memory_bytes once a log has it, or raise tp/pp)",
        fields=("available_kv_memory_bytes", "tp", "pp"))


def does_not_fit_error(model: ModelSpec, budget: MemoryBudget) -> DoesNotFitError:
    """The one-line error for a budget whose weights and overhead exceed the GPU (not budget.fits)."""
    overhead = budget.activation_bytes + budget.cudagraph_bytes + budget.non_torch_bytes
    return DoesNotFitError(
        f"{model.name} does not fit: {format_gib(budget.weights_bytes)} of weights per GPU plus about "
        f"{format_gib(overhead)} of runtime overhead exceed {format_gib(budget.requested_bytes)} "
        f"({budget.gpu_memory_utilization:g} x {format_gib(budget.total_bytes)} on {budget.device}); "
        f"short by {format_gib(budget.shortfall_bytes)}: raise tp/pp or use a larger GPU",
        fields=("tp", "pp"))
