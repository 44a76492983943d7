"""The memory budget term by term: what vLLM logged next to hkv's blind budget for the same start.

hkv re-plans the budget WITHOUT the logged "Available KV cache memory": compute_memory_budget on
the log's settings (log_inputs.log_plan_fields), its utilization, its device (the GPU table
entry whose total the log printed, else that total as gpu_memory_bytes) and its release, the
caller's options on top. Each row then puts one logged term (printed, or derived from printed
figures: consumed - weights, peak - graph estimate) next to hkv's, with hkv's source and band
and whether the logged value, to its rounding, lies inside that band.

Which logged figure is which term depends on the release's print format (logged_memory.py):
0.27+ prints weights + non-torch as one "consumed" figure and a peak activation that holds the
subtracted CUDA graph estimate, so those rows compare the sums too.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from hkv.model_specs.errors import InputError
from hkv.model_specs.model_spec import ModelSpec
from hkv.planner.budget.budget_term import BudgetTerm
from hkv.planner.budget.gpu_table import GPUS, get_gpu
from hkv.planner.budget.memory_budget import MemoryBudget, compute_memory_budget
from hkv.planner.budget.model_runner import uses_v2_runner
from hkv.planner.budget.profile import has_state
from hkv.planner.budget.quantization.dispatch import ONLINE
from hkv.planner.engines.logged_figure import LoggedFigure
from hkv.planner.engines.vllm.log import VllmLog
from hkv.planner.engines.vllm.log_accounting import AccountingCheck, check_accounting
from hkv.planner.engines.vllm.log_inputs import log_plan_fields
from hkv.planner.engines.vllm.logged_memory import LoggedMemory
from hkv.planner.engines.vllm.logged_value import LoggedValue
from hkv.planner.engines.vllm.rules import VllmRules
from hkv.planner.errors import PlanError
from hkv.planner.plan_config import PlanConfig

_SOURCE_ORDER = ("given", "header", "config", "estimate")  # most to least exact


@dataclass(frozen=True)
class TermRow:
    name: str
    logged: LoggedValue | None  # None: the log does not print it
    hkv_bytes: int | None  # None: hkv has no such term
    hkv_low_bytes: int | None
    hkv_high_bytes: int | None
    source: str  # hkv's: given | header | config | estimate | log | GPU table | ...
    note: str = ""
    compared: bool = True  # False: shown for information, no band check (e.g. a term the release ignores)

    @property
    def difference_bytes(self) -> int | None:
        """hkv minus logged."""
        if self.logged is None or self.hkv_bytes is None:
            return None
        return self.hkv_bytes - self.logged.bytes

    @property
    def inside_band(self) -> bool | None:
        """Whether the logged value (to its rounding) lies in hkv's band; None when not compared."""
        if not self.compared or self.logged is None or self.hkv_bytes is None:
            return None
        assert self.hkv_low_bytes is not None and self.hkv_high_bytes is not None
        return self.logged.overlaps(self.hkv_low_bytes, self.hkv_high_bytes)


@dataclass(frozen=True)
class BudgetComparison:
    rows: tuple[TermRow, ...]
    budget: MemoryBudget | None  # None: hkv could not budget (see error)
    config: Mapping[str, Any]  # the PlanConfig fields of the blind re-plan
    accounting: AccountingCheck | None  # the log's own arithmetic
    v2_runner: bool  # the release runs this model on the V2 model runner (or the log says so)
    error: str | None = None

    @property
    def mismatches(self) -> tuple[TermRow, ...]:
        return tuple(row for row in self.rows if row.inside_band is False)


def compare_budget(log: VllmLog, model: ModelSpec, given: Mapping[str, Any], vllm_version: str) -> BudgetComparison:
    """hkv's blind budget for the log's start next to the logged terms. `given`: PlanConfig fields
    the caller set (they win over the log's)."""
    m = log.memory
    fields = blind_config_fields(log, model, given, vllm_version)
    rules = VllmRules.for_version(vllm_version)
    v2_runner = m.v2_model_runner if m.v2_model_runner is not None else uses_v2_runner(
        rules, moe=model.num_experts_per_tok > 0, has_state=has_state(model))
    accounting = check_accounting(m, rules, v2_runner)
    try:
        cfg = PlanConfig(**fields)
        budget = compute_memory_budget(model, cfg)
    except InputError as error:  # e.g. a quantization the checkpoint does not allow: rows stay logged-only
        return BudgetComparison(_logged_only_rows(m), None, fields, accounting, v2_runner, str(error))
    return BudgetComparison(_rows(m, budget, cfg, rules, v2_runner), budget, fields, accounting, v2_runner)


def blind_config_fields(log: VllmLog, model: ModelSpec, given: Mapping[str, Any], vllm_version: str) -> dict[str, Any]:
    """PlanConfig fields: the log's settings and device, then `given`; never the logged budget."""
    fields: dict[str, Any] = {**log_plan_fields(log), **_device_fields(log.memory, given)}
    utilization = log.memory.utilization or log.args.get("gpu_memory_utilization")
    if utilization is not None:
        fields["gpu_memory_utilization"] = float(utilization)
    if log.args.get("enforce_eager") is True:
        fields["enforce_eager"] = True
    if log.args.get("language_model_only") is True:
        fields["language_model_only"] = True
    quantization = str(log.args.get("quantization") or "").lower()
    if quantization in ONLINE and model.quantization_config is None:  # vLLM quantizes at load
        fields["quantization"] = quantization
    fields.update(given)
    for budget_given in ("available_kv_memory_bytes", "vllm_log", "primary_layout"):
        fields.pop(budget_given, None)
    fields["vllm_version"] = vllm_version
    return fields


def _device_fields(m: LoggedMemory, given: Mapping[str, Any]) -> dict[str, Any]:
    """The GPU table entry whose total rounds to the printed one (unique), else the printed total."""
    if m.total is None or "gpu" in given or "gpu_memory_bytes" in given:
        return {}
    printed = Decimal(m.total.text)
    exponent = printed.as_tuple().exponent
    same = [g.name for g in GPUS if Decimal(g.total_bytes / 2**30).quantize(Decimal(1).scaleb(exponent)) == printed]
    if len(same) == 1:
        return {"gpu": same[0]}
    return {"gpu": None, "gpu_memory_bytes": m.total.bytes}


def _value(figure: LoggedFigure | None) -> LoggedValue | None:
    return None if figure is None else LoggedValue.printed(figure)


def _term_row(name: str, logged: LoggedValue | None, term: BudgetTerm, note: str = "",
              compared: bool = True) -> TermRow:
    return TermRow(name, logged, term.bytes, term.low_bytes, term.high_bytes, term.source, note or term.note,
                   compared)


def _sum(name: str, *terms: BudgetTerm) -> BudgetTerm:
    source = max((t.source for t in terms), key=_SOURCE_ORDER.index)
    return BudgetTerm(name, sum(t.bytes for t in terms), source, sum(t.low_bytes for t in terms),
                      sum(t.high_bytes for t in terms), " + ".join(t.name for t in terms))


def _rows(m: LoggedMemory, budget: MemoryBudget, cfg: PlanConfig, rules: VllmRules,
          v2_runner: bool) -> tuple[TermRow, ...]:
    weights, activation = budget.term("weights"), budget.term("activation")
    graphs, non_torch = budget.term("cudagraph"), budget.term("non_torch")
    assert weights and activation and graphs and non_torch
    device = ("the log's printed total" if cfg.gpu is None else
              "the log prints no total: --gpu, else hkv's default GPU" if m.total is None else
              "the GPU whose total the log printed, or --gpu")
    total = budget.total_bytes
    rows = [
        TermRow("GPU total", _value(m.total), total, total, total,
                "log" if cfg.gpu is None else f"GPU table: {cfg.gpu}", device),
        TermRow("requested (total x utilization)", _value(m.requested), budget.requested_bytes,
                budget.requested_bytes, budget.requested_bytes, "config",
                f"{budget.gpu_memory_utilization:g} x total"),
        _term_row("weights", _value(m.weights), weights),
        _term_row("activation peak", _logged_activation(m, rules, v2_runner), activation),
        _term_row("non-torch", _logged_non_torch(m), non_torch),
    ]
    if m.usage_format == "consumed":
        rows += [_term_row("weights + non-torch (consumed)", _value(m.consumed), _sum("consumed", weights, non_torch)),
                 _term_row("peak activation incl. graph estimate", _value(m.peak_activation),
                           _sum("peak", activation, graphs))]
    subtracted = graphs.bytes > 0 or cfg.enforce_eager
    graph_note = graphs.note if subtracted else (
        f"printed, not subtracted by vLLM {rules.name}" + (" on the V2 model runner" if v2_runner else ""))
    rows.append(_term_row("CUDA graph estimate", _value(m.graph_estimate), graphs, graph_note, compared=subtracted))
    if m.graph_actual is not None:
        rows.append(TermRow("CUDA graph pool (captured)", _value(m.graph_actual), None, None, None, "",
                            "captured after the KV cache was sized: outside the budget", compared=False))
    # Signed, as vLLM prints it: a budget that does not fit is negative here (the plan clips it to 0).
    terms = budget.terms
    requested = budget.requested_bytes
    rows.append(TermRow("available KV cache memory", _value(m.available), requested - sum(t.bytes for t in terms),
                        requested - sum(t.high_bytes for t in terms), requested - sum(t.low_bytes for t in terms),
                        "total x utilization - terms",
                        "" if budget.fits else f"does not fit: short by {budget.shortfall_bytes / 2**30:.2f} GiB"))
    return tuple(rows)


def _logged_activation(m: LoggedMemory, rules: VllmRules, v2_runner: bool) -> LoggedValue | None:
    if m.torch_peak is not None:
        return _value(m.torch_peak)
    if m.usage_format == "split":
        return _value(m.peak_activation)
    if m.usage_format == "consumed" and m.peak_activation is not None:
        if m.graph_estimate is not None and not m.graph_estimate_disabled:
            return LoggedValue.difference(("peak", m.peak_activation), ("graph estimate", m.graph_estimate))
        if v2_runner and not rules.v2_estimates_cudagraphs:  # no estimate: the peak is the activation
            return _value(m.peak_activation)
    return None


def _logged_non_torch(m: LoggedMemory) -> LoggedValue | None:
    if m.non_torch is not None:
        return _value(m.non_torch)
    if m.consumed is not None and m.weights is not None:
        return LoggedValue.difference(("consumed", m.consumed), ("weights", m.weights))
    return None


def _logged_only_rows(m: LoggedMemory) -> tuple[TermRow, ...]:
    printed = (("GPU total", m.total), ("requested (total x utilization)", m.requested), ("weights", m.weights),
               ("non-torch", m.non_torch), ("CUDA graph estimate", m.graph_estimate),
               ("available KV cache memory", m.available))
    return tuple(TermRow(name, _value(figure), None, None, None, "") for name, figure in printed
                 if figure is not None)


def unified_memory_device(cfg_fields: Mapping[str, Any]) -> str | None:
    """The GPU table name of a unified-memory device the re-plan runs on, else None."""
    name = cfg_fields.get("gpu")
    if not name:
        return None
    try:
        gpu = get_gpu(str(name))
    except PlanError:
        return None
    return gpu.name if gpu.unified_memory else None
