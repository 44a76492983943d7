"""explain_log: re-plan a vLLM start-up log with exactly its inputs, check every number it printed
against hkv's reproduction, and say why the numbers are what they are.

The inputs are the log's engine settings (log_inputs.py), overridden by what the caller gives.
The budget is searched inside the band the logged "Available KV cache memory" rounds from: a
logged number is reproduced when some budget inside the band yields it. The vLLM release is the
log's when it names one; otherwise the numbers tell (one capacity line: 0.28 or later; two lines:
the token count is int(concurrency x max_model_len) from 0.20.1 and num_blocks // groups x block
before), and the explanation says it inferred it. The layout is `vllm`, or `vllm-no-hybrid` when
the log says the hybrid manager is off (the chunked-local warning, --disable-hybrid-kv-cache-manager);
for a chunked-local model whose log says neither, both are tried, `vllm` first (vLLM turns the
manager off for chunked local attention, with that warning, unless
VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE is 1, its default from 0.14).

Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from hkv.model_specs.cache_spec import CacheKind
from hkv.model_specs.layer_desc import AttentionDesc
from hkv.model_specs.model_spec import ModelSpec
from hkv.planner.engines.log_check import LogCheck
from hkv.planner.engines.vllm.log import VllmLog
from hkv.planner.engines.vllm.log_anomalies import Anomaly, detect_anomalies
from hkv.planner.engines.vllm.log_budget_terms import BudgetComparison, compare_budget
from hkv.planner.engines.vllm.log_inputs import budget_band, hybrid_manager_disabled_by_flag, log_plan_fields
from hkv.planner.engines.vllm.log_reasons import layout_reasons
from hkv.planner.engines.release_version import ReleaseReading, read_release
from hkv.planner.engines.vllm.rules import HISTORY, OLDEST_MODELED, format_version
from hkv.planner.errors import InvalidInputError, LayoutUnavailableError
from hkv.planner.plan import Plan, plan
from hkv.planner.plan_config import PlanConfig

# Releases tried, in order, when the log names none (module docstring).
_ONE_LINE_RELEASES = ("0.32.0", "0.28.0")
_TWO_LINE_RELEASES = ("0.27.0", "0.25.0", "0.20.1", "0.20.0", "0.17.0", "0.13.0")
_PADDING_NOTE = re.compile(r"Add (\d+) padding layers, may waste at most ([\d.]+)%")
_MAMBA_NOTE = re.compile(r"Padding mamba page size by ([\d.]+)%")
_BLOCK_NOTE = re.compile(r"Setting attention block size to (\d+) tokens")
_HYBRID_CHECK = "hybrid KV cache manager"


@dataclass(frozen=True)
class LogExplanation:
    checks: tuple[LogCheck, ...]
    plan: Plan  # the re-plan at the first budget of `budget_range` (all layouts)
    layout_name: str  # the layout the log is read against: vllm or vllm-no-hybrid
    vllm_version: str
    version_source: str  # "log", "option" or "inferred from the numbers"
    budget_range: tuple[int, int] | None  # budgets (bytes) that reproduce; None: none does
    band: tuple[int, int]  # the budgets the logged GiB stands for
    inputs: Mapping[str, Any]  # the PlanConfig fields used (log, then caller)
    assumptions: tuple[str, ...]  # inputs neither the log nor the caller gave
    reasons: tuple[str, ...]  # why the numbers are what they are
    budget: BudgetComparison | None = None  # the logged memory terms next to hkv's blind budget
    anomalies: tuple[Anomaly, ...] = ()  # what changes the meaning of the logged figures
    version_note: str | None = None  # how the log's version text was read (a dev build's release); None: as printed

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)


@dataclass(frozen=True)
class _Attempt:
    layout_name: str
    version: str
    plan: Plan
    budget_range: tuple[int, int] | None
    checks: tuple[LogCheck, ...]


def explain_log(log: VllmLog, model: ModelSpec, given: Mapping[str, Any]) -> LogExplanation:
    """`given`: PlanConfig fields the caller set (they override the log's). Raises
    InvalidInputError for a log without a budget (and none given) or a release hkv does not
    model, LayoutUnavailableError when no vLLM layout applies to the model. The budget terms and
    anomalies (log_budget_terms.py, log_anomalies.py) come with it; they never change `ok`."""
    explanation = _explain_numbers(log, model, given)
    comparison = compare_budget(log, model, given, explanation.vllm_version)
    return replace(explanation, budget=comparison, anomalies=detect_anomalies(log, comparison))


def _explain_numbers(log: VllmLog, model: ModelSpec, given: Mapping[str, Any]) -> LogExplanation:
    inputs = {**log_plan_fields(log), **given}
    band = budget_band(log, given.get("available_kv_memory_bytes"))
    versions, source, version_note = _candidate_versions(log, given)
    inputs.pop("available_kv_memory_bytes", None)
    inputs.pop("vllm_log", None)
    assumptions = _assumptions(log, inputs)
    attempts = []
    for layout_name in _candidate_layouts(log, model):
        for version in versions:
            attempt = _attempt(log, model, {**inputs, "vllm_version": version}, layout_name, band)
            if attempt is None:
                continue
            attempts.append(attempt)
            if all(c.ok for c in attempt.checks):
                return _explanation(attempt, (source, version_note), band, inputs, assumptions)
    if not attempts:
        raise LayoutUnavailableError(f"{model.name}: no vLLM layout applies to this model with the log's settings",
                                     fields=())
    # Prefer the attempt that reproduces the capacity figures (a budget gives them all), then the
    # one with the most checks right.
    best = max(attempts, key=lambda a: (a.budget_range is not None, sum(c.ok for c in a.checks)))
    return _explanation(best, (source, version_note), band, inputs, assumptions)


def _explanation(attempt: _Attempt, version_read: tuple[str, str | None], band: tuple[int, int], inputs: Mapping[str, Any],
                 assumptions: tuple[str, ...]) -> LogExplanation:
    return LogExplanation(
        checks=attempt.checks, plan=attempt.plan, layout_name=attempt.layout_name, vllm_version=attempt.version,
        version_source=version_read[0], version_note=version_read[1], budget_range=attempt.budget_range,
        band=band, inputs={**inputs, "vllm_version": attempt.version}, assumptions=assumptions,
        reasons=_hybrid_reason(attempt) + layout_reasons(attempt.plan, attempt.layout_name, band,
                                                          attempt.budget_range),
    )


def _hybrid_reason(attempt: _Attempt) -> tuple[str, ...]:
    """When the log says the hybrid manager was off but only the hybrid layout gives its numbers."""
    if attempt.layout_name != "vllm" or all(c.ok for c in attempt.checks if c.name == _HYBRID_CHECK) or \
            not any(c.name == _HYBRID_CHECK for c in attempt.checks):
        return ()
    off = attempt.plan.reports.get("vllm-no-hybrid")
    tail = "" if off is None else (f"; with it off this budget would log {off.capacity.kv_cache_tokens:,} tokens and "
                                   f"{off.capacity.logged_concurrency:.2f}x")
    return ("the logged capacity is that of the hybrid KV cache manager ON (VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_"
            f"HYBRID_KV_CACHE=1, the default from vLLM 0.14), not of the start that printed the warning{tail}",)


def _candidate_versions(log: VllmLog, given: Mapping[str, Any]) -> tuple[tuple[str, ...], str, str | None]:
    """The releases to try, where they come from, and how the log's version text was read."""
    if given.get("vllm_version") is not None or given.get("vllm_log") is not None:
        cfg = PlanConfig(vllm_version=given.get("vllm_version"), vllm_log=given.get("vllm_log"))
        return (format_version(cfg.vllm_rules().version),), "option", None
    if log.version is not None:
        reading = _log_release(log.version)
        return (reading.release_text,), "log", reading.note("vLLM")
    if log.one_line is False:
        return _TWO_LINE_RELEASES, "inferred from the numbers", None
    return _ONE_LINE_RELEASES, "inferred from the numbers", None


def _log_release(text: str) -> ReleaseReading:
    """The release the log's version follows, as --vllm-version reads it (a dev build: the release
    before), or the newest hkv models when the log's is newer (its rules have not changed since,
    as far as hkv knows); InvalidInputError for one older than hkv models or no version."""
    try:
        return read_release(text, HISTORY, newer_as_newest=True)
    except InvalidInputError as err:
        raise InvalidInputError(f"the log is from vLLM {text}; hkv models {format_version(OLDEST_MODELED)} to "
                                f"{format_version(HISTORY.newest)}: pass vllm_version, the release it follows",
                                fields=("vllm_version",)) from err


def _candidate_layouts(log: VllmLog, model: ModelSpec) -> tuple[str, ...]:
    if hybrid_manager_disabled_by_flag(log):
        return ("vllm-no-hybrid",)
    if log.hybrid_disabled_for_chunked:  # said so; the numbers may still be another start's
        return ("vllm-no-hybrid", "vllm")
    chunked = any(isinstance(layer, AttentionDesc) and layer.kind is CacheKind.CHUNKED
                  for layer in model.cache_layers)
    # No warning: the manager was on (VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE defaults to 1
    # from vLLM 0.14), unless a paste left the warning out.
    return ("vllm", "vllm-no-hybrid") if chunked else ("vllm",)


def _assumptions(log: VllmLog, inputs: Mapping[str, Any]) -> tuple[str, ...]:
    out = []
    if "max_num_batched_tokens" not in inputs:
        out.append("max_num_batched_tokens: not in the log; vLLM's default for the GPU class was used "
                   "(pass max_num_batched_tokens if the run set it)")
    if "max_model_len" not in inputs:
        out.append("max_model_len: not in the log; the model's own was used")
    return tuple(out)


def _attempt(log: VllmLog, model: ModelSpec, inputs: Mapping[str, Any], layout_name: str,
             band: tuple[int, int]) -> _Attempt | None:
    def plan_at(budget: int) -> Plan:
        return plan(model, PlanConfig(**{**inputs, "available_kv_memory_bytes": budget,
                                         "primary_layout": layout_name}))

    try:
        first = plan_at(band[0])
    except LayoutUnavailableError:
        return None
    bytes_per_block = sum(p.bytes_per_block for p in first.reports[layout_name].layout.pools)
    budgets = _budgets_in_band(band, bytes_per_block)
    match = None
    logged = _logged_key(log)
    # Every logged figure at one budget; failing that, the budget that gives the concurrency (or
    # the token count) alone, so the checks show the one figure that differs.
    for target in (logged, (None, logged[1]), (logged[0], None)):
        if target == (None, None) and logged != (None, None):
            continue
        match = _matching_budgets(budgets, lambda b, t=target: _plan_key(t, plan_at(b), layout_name), target)
        if match is not None:
            break
    chosen = plan_at(match[0]) if match else first
    full_match = match if match is not None and _plan_key(logged, chosen, layout_name) == logged else None
    return _Attempt(layout_name, str(inputs["vllm_version"]), chosen, full_match,
                    _checks(log, chosen, layout_name))


def _budgets_in_band(band: tuple[int, int], bytes_per_block: int) -> list[int]:
    """One budget per distinct num_blocks the band can give: the band's start, then each block
    boundary inside it (a vllm layout's capacity changes only there)."""
    lo, hi = band
    first_boundary = (lo // bytes_per_block + 1) * bytes_per_block
    return [lo, *range(first_boundary, hi + 1, bytes_per_block)]


def _logged_key(log: VllmLog) -> tuple[Any, ...]:
    """(tokens, concurrency as printed) of the log; None where it does not print one."""
    return (log.kv_cache_tokens, log.max_concurrency)


def _plan_key(target: tuple[Any, ...], the_plan: Plan, layout_name: str) -> tuple[Any, ...]:
    """The plan's figures in `target`'s form, None where target has None (nondecreasing in the
    budget)."""
    cap = the_plan.reports[layout_name].capacity
    return (None if target[0] is None else cap.kv_cache_tokens,
            None if target[1] is None else f"{cap.logged_concurrency:.2f}")


def _matching_budgets(budgets: Sequence[int], key_at: Callable[[int], tuple[Any, ...]],
                      target: tuple[Any, ...]) -> tuple[int, int] | None:
    """The first and last budget whose key equals target; keys are nondecreasing in the budget
    (more blocks never lower vLLM's figures), so bisect to the first key >= target."""
    if target == (None, None):
        return budgets[0], budgets[-1]
    sortable = tuple((0 if v is None else float(v)) for v in target)

    def order(budget: int) -> tuple[float, ...]:
        return tuple((0 if v is None else float(v)) for v in key_at(budget))

    lo, hi = 0, len(budgets)
    while lo < hi:
        mid = (lo + hi) // 2
        if order(budgets[mid]) < sortable:
            lo = mid + 1
        else:
            hi = mid
    matches = []
    for index in range(lo, len(budgets)):
        if key_at(budgets[index]) != target:
            break
        matches.append(index)
    if not matches:
        return None
    last = matches[-1]
    end = budgets[last + 1] - 1 if last + 1 < len(budgets) else budgets[-1]
    return budgets[matches[0]], end


def _checks(log: VllmLog, the_plan: Plan, layout_name: str) -> tuple[LogCheck, ...]:
    report = the_plan.reports[layout_name]
    cap, layout = report.capacity, report.layout
    checks = []
    if log.kv_cache_tokens is not None:
        checks.append(_check("KV cache size (tokens)", f"{log.kv_cache_tokens:,}", f"{cap.kv_cache_tokens:,}"))
    if log.max_concurrency is not None:
        checks.append(_check(f"Maximum concurrency for {cap.max_model_len:,} tokens",
                             f"{log.max_concurrency}x", f"{cap.logged_concurrency:.2f}x"))
    if log.concurrency_len is not None:
        checks.append(_check("max_model_len", f"{log.concurrency_len:,}", f"{cap.max_model_len:,}"))
    notes = " | ".join(layout.notes)
    if log.padding_layers is not None:
        ours = _PADDING_NOTE.search(notes)
        checks.append(_check("padding layers", f"{log.padding_layers[0]} ({log.padding_layers[1]}% waste)",
                             f"{ours[1]} ({ours[2]}% waste)" if ours else "0"))
    if log.attention_block_size is not None:
        ours = _BLOCK_NOTE.search(notes)
        checks.append(_check("attention block size (tokens)", str(log.attention_block_size),
                             ours[1] if ours else "not raised"))
    if log.mamba_padding_pct is not None:
        ours = _MAMBA_NOTE.search(notes)
        checks.append(_check("mamba page padding", f"{log.mamba_padding_pct}%", f"{ours[1]}%" if ours else "none"))
    if log.hybrid_disabled_for_chunked:
        checks.append(_check(_HYBRID_CHECK, "disabled (chunked local attention)",
                             "disabled (chunked local attention)" if layout_name == "vllm-no-hybrid"
                             else "enabled"))
    return tuple(checks)


def _check(name: str, logged: str, reproduced: str) -> LogCheck:
    return LogCheck(name, logged, reproduced, logged == reproduced)
