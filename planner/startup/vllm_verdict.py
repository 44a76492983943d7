"""vllm_startup(plan): vLLM's start-up verdict for the plan's `vllm` layout and budget.

The refusals run in the order vLLM meets them: the engine core's memory check
(vllm_memory_checks.py) while it sizes the cache, then each worker's CUDA graph set-up
(vllm_mamba_check.py). "No available memory" ends the list (nothing after it is sized). Where the
budget is an estimate and the plan starts at it, the band's low end is checked too: a refusal
there is the warning "may_not_start".
"""

from __future__ import annotations

from collections.abc import Callable

from hkv.planner.plan import Plan
from hkv.planner.sizes import format_gib
from hkv.planner.startup.issue import StartupIssue, StartupVerdict
from hkv.planner.startup.vllm_kv_need import VllmKvNeed
from hkv.planner.startup.vllm_mamba_check import mamba_blocks_below_max_num_seqs
from hkv.planner.startup.vllm_memory_checks import max_model_len_too_long, no_kv_memory
from hkv.planner.startup.vllm_warnings import WARNINGS

VllmCheck = Callable[[Plan, VllmKvNeed, int], StartupIssue | None]
REFUSALS: tuple[VllmCheck, ...] = (max_model_len_too_long, mamba_blocks_below_max_num_seqs)


def vllm_startup(plan: Plan) -> StartupVerdict:
    rules = plan.config.vllm_rules()
    report = plan.reports.get("vllm")
    if report is None:  # vLLM cannot build the cache for this model at all
        why = plan.skipped.get("vllm", "no vllm layout")
        return StartupVerdict.of("vllm", rules.name, (StartupIssue("not_served", why, None, f"vLLM {rules.name}"),), ())
    need = VllmKvNeed.of(report.layout, rules.version)
    errors = refusals(plan, need, plan.budget.available_bytes)
    warnings = tuple(w for w in (check(plan, need) for check in WARNINGS) if w is not None)
    return StartupVerdict.of("vllm", rules.name, errors, (*_band_warning(plan, need, errors), *warnings))


def refusals(plan: Plan, need: VllmKvNeed, available_bytes: int) -> tuple[StartupIssue, ...]:
    """vLLM's refusals with `available_bytes` of KV memory, in the order it raises them."""
    empty = no_kv_memory(plan, need, available_bytes)
    if empty is not None:
        return (empty,)
    return tuple(issue for issue in (check(plan, need, available_bytes) for check in REFUSALS) if issue is not None)


def _band_warning(plan: Plan, need: VllmKvNeed, errors: tuple[StartupIssue, ...]) -> tuple[StartupIssue, ...]:
    """A plan that starts at the estimate but not at the band's low end."""
    budget = plan.budget
    low, _ = budget.available_band
    if errors or budget.exact or low >= budget.available_bytes:
        return ()
    at_low = refusals(plan, need, low)
    if not at_low:
        return ()
    first = at_low[0]
    return (StartupIssue("may_not_start", first.message, first.fix, first.releases,
                         detail=f"at the low end of the budget band ({format_gib(low)} of KV memory) vLLM raises "
                                f"this ({first.code}); its profile run decides"),)
