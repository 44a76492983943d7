"""plan(model, config) -> Plan: the memory budget and every layout with its capacity."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from hkv.model_specs.model_spec import ModelSpec
from hkv.planner.capacity import Capacity, vllm_log_lines
from hkv.planner.errors import LayoutUnavailableError
from hkv.planner.hkv_layout import build_hkv_layout
from hkv.planner.layout import Layout
from hkv.planner.memory_budget import MemoryBudget, compute_memory_budget
from hkv.planner.partitioned_layout import build_partitioned_layout
from hkv.planner.plan_config import PlanConfig
from hkv.planner.vllm_layout import build_vllm_layout

LayoutBuilder = Callable[[ModelSpec, PlanConfig, MemoryBudget], Layout]

BUILDERS: dict[str, LayoutBuilder] = {
    "hkv": build_hkv_layout,
    "vllm": lambda m, c, b: build_vllm_layout(m, c, b, hybrid=True),
    "vllm-no-hybrid": lambda m, c, b: build_vllm_layout(m, c, b, hybrid=False),
    "partitioned": build_partitioned_layout,
}


@dataclass(frozen=True)
class LayoutReport:
    layout: Layout
    capacity: Capacity
    waste_fraction: float
    ideal_bytes_per_request: int
    log_lines: tuple[str, ...] = ()


@dataclass(frozen=True)
class Plan:
    model: ModelSpec
    config: PlanConfig
    budget: MemoryBudget
    reports: dict[str, LayoutReport] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # layout name -> why it cannot apply

    @property
    def primary(self) -> LayoutReport:
        return self.reports[self.config.primary_layout]


def build_layout(name: str, model: ModelSpec, cfg: PlanConfig, budget: MemoryBudget) -> Layout:
    """One layout by name; raises LayoutUnavailableError where the strategy cannot apply."""
    layout = BUILDERS[name](model, cfg, budget)
    layout.check_integrity()
    return layout


def plan(model: ModelSpec, cfg: PlanConfig) -> Plan:
    """Pure: no I/O. Raises DoesNotFitError / InvalidInputError / LayoutUnavailableError
    (the latter only when the primary layout cannot apply)."""
    budget = compute_memory_budget(model, cfg)
    upper_len = max(model.max_model_len, cfg.max_model_len or 0)
    reports: dict[str, LayoutReport] = {}
    skipped: dict[str, str] = {}
    for name in BUILDERS:
        try:
            layout = build_layout(name, model, cfg, budget)
        except LayoutUnavailableError as err:
            skipped[name] = str(err)
            continue
        seq_len = layout.max_model_len
        lines = vllm_log_lines(layout, cfg.vllm_log) if name.startswith("vllm") else ()
        reports[name] = LayoutReport(
            layout, Capacity.of(layout, cfg.concurrency, upper_len), layout.waste_fraction(seq_len),
            layout.ideal_bytes_per_request(seq_len), lines,
        )
    if cfg.primary_layout in skipped:
        raise LayoutUnavailableError(f"--layout {cfg.primary_layout}: {skipped[cfg.primary_layout]}")
    return Plan(model, cfg, budget, reports, skipped)
