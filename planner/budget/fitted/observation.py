"""What one real start-up log says about the budget's fitted terms.

hkv plans the start-up blind (only what the user knew), then reads the log against that plan:

    overhead = requested - weights - available - hkv's activation

is what the CUDA graph estimate and the non-torch memory took, plus whatever hkv's activation
missed. The fit (fit.py) splits it into the constants of budget_constants.py; the logged graph
estimate, where printed, fits the graph bytes alone, and a logged non-torch figure (up to 0.26)
fits the non-torch parts alone, free of hkv's activation and graph errors.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from hkv.model_specs.model_spec import ModelSpec
from hkv.planner.budget.budget_constants import BudgetConstants
from hkv.planner.budget.cudagraph_estimate import CudagraphEstimate
from hkv.planner.budget.memory_budget import compute_memory_budget
from hkv.planner.budget.non_torch import NonTorchSetup
from hkv.planner.budget.profile import graph_estimate, graph_estimate_subtracted, non_torch_setup, v2_dense_layer_bytes
from hkv.planner.plan_config import PlanConfig

GIB = 2**30


@dataclass(frozen=True)
class LoggedBudget:
    """The figures a start-up log printed (GiB per rank, as printed); None where it did not print one."""

    available_kv_gib: float | None = None
    weights_gib: float | None = None
    cuda_graph_est_gib: float | None = None
    requested_memory_gib: float | None = None
    non_torch_gib: float | None = None  # "non-torch memory" as printed up to 0.26 (0.27+ prints consumed instead)


@dataclass(frozen=True)
class BudgetObservation:
    record_id: str
    source: str  # the author or machine: records of one source are left out together
    machine: str  # "GPU@release": calibration carries a residual only within one source's machine
    setup: NonTorchSetup
    graph: CudagraphEstimate | None  # the graphs the estimate captures (None: eager)
    graph_subtracted: bool  # the release took the estimate out of the budget
    logged_graph_bytes: int | None  # "Estimated CUDA graph memory", where printed
    overhead_bytes: int | None  # graph (where subtracted) + non-torch as the log implies; None: no available logged
    activation_bytes: int = 0  # hkv's activation point for this start-up (what the overhead was taken net of)
    fit: bool = True  # False: the log's own figures do not add up; scored, never fitted on
    logged_non_torch_bytes: int | None = None  # the non-torch figure itself, where the log printed it
    v2_dense_bytes: int = 0  # hidden x layers x dtype on a dense model on the V2 runner (profile.py)

    def v2_dense_extra(self, constants: BudgetConstants) -> int:
        """What the fitted V2 dense-profile term adds to hkv's activation under `constants`."""
        return int(constants.v2_dense_layer_tokens * self.v2_dense_bytes)

    def graph_bytes(self, constants: BudgetConstants) -> int:
        """The graph bytes the budget lost under `constants` (0 where the release subtracts none)."""
        if self.graph is None or not self.graph_subtracted:
            return 0
        return self.graph.bytes_with(constants)


def observe(record_id: str, source: str, model: ModelSpec, cfg: PlanConfig, logged: LoggedBudget,
            fit: bool = True) -> BudgetObservation:
    """The observation of one start-up: `cfg` is the blind plan's config (no available_kv_memory_bytes)."""
    # hkv's activation without the fitted V2 term: the fit decides that term from the overhead
    base = replace(cfg.budget_constants, v2_dense_layer_tokens=0.0)
    budget = compute_memory_budget(model, replace(cfg, available_kv_memory_bytes=None, budget_constants=base))
    mnbt = budget.max_num_batched_tokens
    sized = replace(cfg, max_num_seqs=budget.max_num_seqs)
    requested = (int(logged.requested_memory_gib * GIB) if logged.requested_memory_gib is not None
                 else budget.requested_bytes)
    weights = int(logged.weights_gib * GIB) if logged.weights_gib is not None else budget.weights_bytes
    overhead = None
    if logged.available_kv_gib is not None:
        overhead = requested - weights - int(logged.available_kv_gib * GIB) - budget.activation_bytes
    graph_logged = int(logged.cuda_graph_est_gib * GIB) if logged.cuda_graph_est_gib is not None else None
    non_torch = int(logged.non_torch_gib * GIB) if logged.non_torch_gib is not None else None
    machine = f"{cfg.gpu or 'custom'}@{cfg.vllm_rules().version}"
    return BudgetObservation(record_id, source, machine, non_torch_setup(model, sized, mnbt), graph_estimate(model, sized, mnbt),
                             graph_estimate_subtracted(model, sized), graph_logged, overhead, budget.activation_bytes, fit, non_torch,
                             v2_dense_layer_bytes(model, sized))
