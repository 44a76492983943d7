"""explain_sglang_log: re-size SGLang's pools with a start-up log's own inputs and check each pool
figure it printed against hkv's reproduction.

The inputs are the log's server_args dump (its resolved mem_fraction_static included), overridden
by what the caller gives. The budget is SGLang's profiled rest (kv_cache_configurator.py,
_profile_available_bytes): free memory after the weights - free memory before them x
(1 - mem_fraction_static) (- SGLANG_VLM_CACHE_SIZE_MB for multimodal models), from the "Load weight
begin/end. avail mem=X GB" lines, each printed to 0.01 GiB, so the rest is known to a band. Without those lines a given rest (--available-kv-memory)
is used; without either, the band is every budget, and the checks then say whether ONE budget
reproduces all printed figures together (the full pool pins it; the sliding pool, state slots and
request cap must follow). Within the band the budget searched for is the smallest that gives the
logged full-attention pool, or the logged state slots when no pool line was pasted (both grow with
the budget).

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from hkv.model_specs.model_spec import ModelSpec
from hkv.planner.engines.log_check import LogCheck
from hkv.planner.engines.sglang.budget import VLM_CACHE_MIB
from hkv.planner.engines.sglang.log import SglangLog
from hkv.planner.engines.sglang.log_size_checks import predicted_log, size_checks
from hkv.planner.engines.sglang.model_view import sglang_model
from hkv.planner.engines.sglang.pool_resolution import resolve_pools
from hkv.planner.engines.sglang.pools import SglangPools
from hkv.planner.engines.sglang.rules import for_sglang_version
from hkv.planner.engines.sglang.server_args import SglangServerArgs
from hkv.planner.errors import DoesNotFitError, InvalidInputError
from hkv.planner.sizes import format_gib

_MAX_BUDGET_BYTES = 2**41  # 2 TiB per rank: above any card's memory
# SGLang's server_args names -> SglangServerArgs fields, where they differ.
_ARG_NAMES = {"cuda_graph_max_bs_decode": "cuda_graph_max_bs"}
ResolvePools = Callable[[ModelSpec, SglangServerArgs, int, float], SglangPools]
PredictLog = Callable[[ModelSpec, SglangServerArgs, int, float], SglangLog]


@dataclass(frozen=True)
class SglangLogExplanation:
    checks: tuple[LogCheck, ...]
    args: SglangServerArgs  # the inputs the pools were resized with (log, then caller)
    pools: SglangPools | None  # hkv's pools at the budget found, else at the band's end nearest the logged pool
    budget_found: bool  # some budget in the band gives the logged pool (the one `pools` comes from)
    band: tuple[int, int]  # the profiled rests the printed memory stands for (bytes)
    band_source: str  # "log", "given" or "inferred from the logged pool"
    assumptions: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)


def log_server_args(log: SglangLog, given: Mapping[str, Any]) -> SglangServerArgs:
    """SglangServerArgs from the log's server_args dump, then `given` (SglangServerArgs fields)."""
    names = {f.name for f in fields(SglangServerArgs)}
    from_log = {_ARG_NAMES.get(key, key): value for key, value in log.args.items()}
    values = {name: value for name, value in from_log.items() if name in names and value is not None}
    values.pop("version", None)
    if "chunked_prefill_size" not in values and log.summary is not None and log.summary.chunked_prefill_size:
        # the resolved one, as printed
        values["chunked_prefill_size"] = log.summary.chunked_prefill_size
    return replace(SglangServerArgs(), **{**values, **given})


def explain_sglang_log(log: SglangLog, model: ModelSpec, given: Mapping[str, Any],
                       available_bytes: int | None, resolve_pools: ResolvePools = resolve_pools,
                       predict: PredictLog | None = predicted_log) -> SglangLogExplanation:
    """`given`: SglangServerArgs fields the caller set; `available_bytes`: a profiled rest the caller
    gave; `resolve_pools`: hkv's SGLang pool sizing and `predict` the lines it prints at a budget
    (a test passes its own rule and no lines). InvalidInputError when the weight lines are there
    but no mem_fraction_static turns them into a budget, or the log prints no pool figure."""
    args = log_server_args(log, given)
    target = _search_target(log)
    if target is None:
        raise InvalidInputError("the log prints no pool size (\"max_total_num_tokens=\", \"KV Cache is allocated\", "
                                "\"Use sliding window memory pool\", \"SWAKVPool\", \"max_mamba_cache_size\"); paste "
                                "SGLang's start-up log", fields=("log_file",))
    band_from_log = available_bytes is None and log.load_begin_avail is not None and log.load_end_avail is not None
    if args.mem_fraction_static is None and band_from_log:
        raise InvalidInputError("the log's server_args give no mem_fraction_static, which turns its free-memory lines "
                                "into the budget: pass --mem-fraction-static (SGLang prints the one it used in its "
                                "server_args line)", fields=("mem_fraction_static",))
    # Without the weight lines the fraction sizes nothing: the pools come from the budget alone.
    mfs = 0.0 if args.mem_fraction_static is None else args.mem_fraction_static
    band, source = _band(log, mfs, available_bytes, _multimodal_reservation_bytes(model, args))

    def pools_at(budget: int) -> SglangPools | None:
        try:
            return resolve_pools(model, args, budget, mfs)
        except DoesNotFitError:  # SGLang refuses budgets this small (too few tokens, no state slot)
            return None

    budget = _smallest_budget(pools_at, band, *target)
    if budget is not None:
        pools = pools_at(budget)
    else:  # show what the band gives at its end nearest the logged figure
        high = pools_at(band[1])
        value = None if high is None else target[1](high)
        pools = high if value is None or value < target[0] else pools_at(band[0])
    assumptions = _assumed_defaults(log, given, args, pools)
    checks = _checks(log, pools)
    if predict is not None and pools is not None:
        checks += size_checks(log, predict(model, args, pools.available_bytes, mfs))
    return SglangLogExplanation(checks, args, pools, budget is not None, band, source, assumptions)


def _search_target(log: SglangLog) -> tuple[int, Callable[[SglangPools], int | None]] | None:
    """The printed figure the budget is searched for: the full-attention pool from whichever line
    printed it, else the state slots (a paste of the Mamba lines alone)."""
    summary_tokens = None if log.summary is None else log.summary.max_total_num_tokens
    kv_tokens = None if log.kv_pool is None else log.kv_pool.num_tokens
    for value in (log.full_layer_tokens, log.swa_pool_full_tokens, summary_tokens, kv_tokens):
        if value is not None:
            return value, lambda p: p.max_total_num_tokens
    cap_slots = None if log.mamba_cap is None else log.mamba_cap.max_mamba_cache_size
    for value in (log.max_mamba_cache_size, cap_slots):
        if value is not None:
            return value, lambda p: p.max_mamba_cache_size
    return None


def _assumed_defaults(log: SglangLog, given: Mapping[str, Any], args: SglangServerArgs,
                      pools: SglangPools | None) -> tuple[str, ...]:
    """The sizing arguments neither the log nor the caller gave, where they matter."""
    unsaid = [name for name in ("page_size", "swa_full_tokens_ratio", "mamba_full_memory_ratio")
              if name not in log.args and name not in given]
    lines = []
    if "page_size" in unsaid:
        page = "the model's" if pools is None else str(pools.page_size)
        lines.append(f"page_size = SGLang's default for the model ({page})")
    if "swa_full_tokens_ratio" in unsaid and (pools is None or pools.swa_tokens is not None):
        lines.append("swa_full_tokens_ratio = SGLang's default for the model (0.8; DeepSeek-V4 0.1)")
    if "mamba_full_memory_ratio" in unsaid and (pools is None or pools.max_mamba_cache_size is not None):
        lines.append(f"mamba_full_memory_ratio = SGLang's default ({args.mamba_full_memory_ratio})")
    if args.mem_fraction_static is None:
        lines.append("mem_fraction_static: neither the log nor an option gives it; not needed without the weight "
                     "lines (the pools come from the budget alone)")
    return tuple(lines)


def _multimodal_reservation_bytes(model: ModelSpec, args: SglangServerArgs) -> int:
    """SGLANG_VLM_CACHE_SIZE_MB, which multimodal models take out of the rest (as plan_sglang does)."""
    reserved = sglang_model(model).is_multimodal and for_sglang_version(args.version).multimodal_reservation
    return VLM_CACHE_MIB * 2**20 if reserved else 0


def _band(log: SglangLog, mfs: float, available_bytes: int | None, reservation_bytes: int
          ) -> tuple[tuple[int, int], str]:
    if available_bytes is not None:
        return (available_bytes, available_bytes), "given"
    if log.load_begin_avail is not None and log.load_end_avail is not None:
        begin_low, begin_high = log.load_begin_avail.interval
        end_low, end_high = log.load_end_avail.interval
        slack = 1 - mfs
        low = int(end_low - begin_high * slack) - reservation_bytes
        high = int(end_high - begin_low * slack) - reservation_bytes
        return (max(0, low), max(0, high)), "log"
    return (0, _MAX_BUDGET_BYTES), "inferred from the logged pool"


def _smallest_budget(pools_at: Callable[[int], SglangPools | None], band: tuple[int, int], target: int,
                     figure: Callable[[SglangPools], int | None]) -> int | None:
    """The smallest budget in `band` whose `figure` is `target`; None when none is."""
    def tokens(budget: int) -> int:
        pools = pools_at(budget)
        value = None if pools is None else figure(pools)
        return -1 if value is None else value

    low, high = band
    if tokens(high) < target:
        return None
    while low < high:  # the smallest budget with at least `target` tokens
        middle = (low + high) // 2
        if tokens(middle) >= target:
            high = middle
        else:
            low = middle + 1
    return low if tokens(low) == target else None


def _checks(log: SglangLog, pools: SglangPools | None) -> tuple[LogCheck, ...]:
    """One check per printed pool figure, against hkv's pools (None: SGLang would not start)."""
    summary = log.summary
    cap = log.mamba_cap
    logged: list[tuple[str, int | None, Callable[[SglangPools], int | None]]] = [
        ("full_layer_tokens", log.full_layer_tokens, lambda p: p.max_total_num_tokens),
        ("swa_layer_tokens", log.swa_layer_tokens, lambda p: p.swa_tokens),
        ("SWAKVPool full size", log.swa_pool_full_tokens, lambda p: p.max_total_num_tokens),
        ("SWAKVPool swa size", log.swa_pool_swa_tokens, lambda p: p.swa_tokens),
        ("KV Cache #tokens", None if log.kv_pool is None else log.kv_pool.num_tokens, lambda p: p.max_total_num_tokens),
        ("SWA KV Cache #tokens", None if log.swa_kv_pool is None else log.swa_kv_pool.num_tokens,
         lambda p: p.swa_tokens),
        ("max_mamba_cache_size", log.max_mamba_cache_size, lambda p: p.max_mamba_cache_size),
        ("mamba cap max_mamba_cache_size", None if cap is None else cap.max_mamba_cache_size,
         lambda p: p.max_mamba_cache_size),
        ("mamba cap max_running_requests", None if cap is None else cap.max_running_requests,
         lambda p: p.max_running_requests),
        ("max_total_num_tokens", None if summary is None else summary.max_total_num_tokens,
         lambda p: p.max_total_num_tokens),
        ("max_running_requests", None if summary is None else summary.max_running_requests,
         lambda p: p.max_running_requests),
        ("context_len", None if summary is None else summary.context_len, lambda p: p.context_len),
    ]
    checks = []
    for name, value, ours in logged:
        if value is None:
            continue
        mine = None if pools is None else ours(pools)
        text = "does not start" if pools is None else ("none" if mine is None else f"{mine:,}")
        checks.append(LogCheck(name, f"{value:,}", text, mine == value))
    return tuple(checks)


def band_text(band: tuple[int, int]) -> str:
    low, high = band
    return format_gib(low) if low == high else f"{format_gib(low)} to {format_gib(high)}"
