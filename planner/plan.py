"""plan(model, config) -> Plan: the memory budget and every layout with its capacity."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from hkv.model_specs.draft_layers import full_attention_drafts
from hkv.model_specs.errors import InvalidConfigError
from hkv.model_specs.model_spec import ModelSpec
from hkv.planner.attention_backend import BlockSizeChoice, plan_block_size, with_block_size
from hkv.planner.budget.memory_budget import MemoryBudget, compute_memory_budget
from hkv.planner.capacity.capacity import Capacity, vllm_log_lines
from hkv.planner.capacity.band import CapacityBand
from hkv.planner.engines.vllm.layout import build_vllm_layout
from hkv.planner.engines.vllm.rules import CURRENT_LOG_FORMAT, LogFormat
from hkv.planner.errors import InvalidInputError, LayoutUnavailableError
from hkv.planner.hkv_layout import build_hkv_layout
from hkv.planner.layout import Layout
from hkv.planner.partitioned_layout import build_partitioned_layout
from hkv.planner.plan_config import ALLOW_LONG_ENV, PlanConfig
from hkv.planner.capacity.sustained import SustainedSetup, split_request

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
    bands: dict[str, CapacityBand] = field(default_factory=dict)  # estimated budgets: capacity at its band's ends
    block: BlockSizeChoice | None = None  # the block size in force (config.block_size) and why

    @property
    def primary(self) -> LayoutReport:
        return self.reports[self.config.primary_layout]


def with_draft_layers(model: ModelSpec, cfg: PlanConfig) -> ModelSpec:
    """`model` with cfg.draft_layers EAGLE draft layers in place of the config's MTP layers."""
    if cfg.draft_layers is None:
        return model
    try:
        drafts = full_attention_drafts(model.cache_layers, model.num_hidden_layers, cfg.draft_layers)
    except InvalidConfigError as err:
        raise InvalidInputError(f"draft_layers: {err}", fields=("draft_layers",)) from None
    return replace(model, draft_layers=drafts)


def build_layout(name: str, model: ModelSpec, cfg: PlanConfig, budget: MemoryBudget) -> Layout:
    """One layout by name; raises LayoutUnavailableError where the strategy cannot apply, and
    InvalidInputError for --draft-layers on a model without full attention to copy."""
    layout = BUILDERS[name](with_draft_layers(model, cfg), with_block_size(model, cfg), budget)
    layout.check_integrity()
    return layout


def plan(model: ModelSpec, cfg: PlanConfig) -> Plan:
    """Pure: no I/O. Raises InvalidInputError (also for a max_model_len beyond the model's
    positions, unless cfg.allow_long_max_model_len) / LayoutUnavailableError (only when the primary
    layout cannot apply). A model that does not fit gives a plan whose budget says so (`fits`)."""
    check_max_model_len(model, cfg)
    block = plan_block_size(model, cfg)  # raises InvalidInputError for a size no backend runs
    cfg = replace(cfg, block_size=block.block_size)
    budget = compute_memory_budget(model, cfg)
    upper_len = max(model.max_model_len, cfg.max_model_len or 0)
    setup = sustained_setup(cfg, budget)
    check_output_len(cfg.max_model_len or model.max_model_len, cfg)
    reports: dict[str, LayoutReport] = {}
    skipped: dict[str, str] = {}
    primary_error: LayoutUnavailableError | None = None
    for name in BUILDERS:
        try:
            layout = build_layout(name, model, cfg, budget)
        except LayoutUnavailableError as err:
            skipped[name] = str(err)
            primary_error = err if name == cfg.primary_layout else primary_error
            continue
        seq_len = layout.max_model_len
        # Only the vllm layouts print vLLM's lines; their kv_cache_tokens is the line's number.
        log_format = _log_format(name, cfg)
        lines = vllm_log_lines(layout, log_format) if name.startswith("vllm") else ()
        reports[name] = LayoutReport(
            layout, Capacity.of(layout, cfg.concurrency, upper_len, setup, log_format), layout.waste_fraction(seq_len),
            layout.ideal_bytes_per_request(seq_len), lines,
        )
    if primary_error is not None:
        raise LayoutUnavailableError(f"primary_layout {cfg.primary_layout}: {primary_error}",
                                     fields=("primary_layout", *primary_error.fields))
    return Plan(model, cfg, budget, reports, skipped, bands=capacity_bands(model, cfg, budget, reports, upper_len),
                block=block)


def _log_format(layout_name: str, cfg: PlanConfig) -> LogFormat:
    """Only the vllm layouts print vLLM's lines (in the release's format); the others count as today's."""
    return cfg.vllm_rules().log_format if layout_name.startswith("vllm") else CURRENT_LOG_FORMAT


def sustained_setup(cfg: PlanConfig, budget: MemoryBudget) -> SustainedSetup:
    """The engine settings of the sustained figure: the plan's token budget, sequence cap and split."""
    return SustainedSetup(budget.max_num_batched_tokens, budget.max_num_seqs, cfg.output_len)


def check_output_len(max_model_len: int, cfg: PlanConfig) -> None:
    """InvalidInputError when cfg.output_len leaves a max-length request no prompt token."""
    try:
        split_request(max_model_len, cfg.output_len)
    except ValueError as err:
        raise InvalidInputError(str(err), fields=("output_len",)) from None


def check_max_model_len(model: ModelSpec, cfg: PlanConfig) -> None:
    """InvalidInputError when cfg.max_model_len exceeds the model's positions and the config does
    not allow it (vLLM refuses the same unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1)."""
    if cfg.max_model_len is None or cfg.max_model_len <= model.max_model_len or cfg.allow_long_max_model_len:
        return
    raise InvalidInputError(
        f"max_model_len {cfg.max_model_len:,} exceeds the {model.max_model_len:,} positions of {model.name}; "
        f"set {ALLOW_LONG_ENV}=1 if you mean it (outputs past the trained positions may be garbage)",
        fields=("max_model_len",))


def capacity_bands(model: ModelSpec, cfg: PlanConfig, budget: MemoryBudget, reports: dict[str, LayoutReport],
                   upper_len: int) -> dict[str, CapacityBand]:
    """Each layout's capacity at the low and high end of an estimated budget's band; {} when the
    budget is exact, its band is one value, or even its high end leaves nothing. The sustained
    range is searched for the primary layout only (each end is a scheduler search, seconds at
    1,024 sequences); the other layouts' bands leave it None."""
    low, high = budget.available_band
    if budget.exact or low == high or high == 0:
        return {}
    setup = sustained_setup(cfg, budget)
    bands: dict[str, CapacityBand] = {}
    for name, report in reports.items():
        log_format = _log_format(name, cfg)
        searched = name == cfg.primary_layout
        center = report.capacity.sustained_concurrency
        ends: list[Capacity] = []
        # less memory never sustains more requests, more never fewer: each end searches one side
        for available, bounds in ((low, (0, center)), (high, (center, setup.max_num_seqs))):
            try:
                layout = build_layout(name, model, cfg, replace(budget, available_bytes=available))
                # bounds (0, 0): no search, the figure is left out of the band
                ends.append(Capacity.of(layout, cfg.concurrency, upper_len, setup, log_format,
                                        bounds if searched else (0, 0)))
            except LayoutUnavailableError:  # the low end may hold too little for this layout
                ends.append(report.capacity)
        lo, hi = ends
        bands[name] = CapacityBand(
            low, high, (lo.kv_cache_tokens, hi.kv_cache_tokens), (lo.logged_concurrency, hi.logged_concurrency),
            (lo.sustained_concurrency, hi.sustained_concurrency) if searched else None,
            (lo.max_context_len, hi.max_context_len))
    return bands
