"""sglang_startup(planned): SGLang's start-up verdict from its plan (planner/engines/sglang).

SGLang's refusals are the DoesNotFitError plan_sglang raises (no memory left for the KV cache,
no state slot, no request); `sglang_refusal` turns one into the verdict. The warnings:

  max_running_requests capped by the state pool: SGLang's own warning, srt/mem_cache/
    kv_cache_configurator.py (0.5.17 l.1741, 0.5.19 l.2127, 0.5.20 l.2285, 0.5.21 l.2314, 0.5.22
    l.2822, 0.5.23 l.3141); 0.5.14 caps without it (model_runner_kv_cache_mixin.py l.999), 0.5.15 and
    0.5.16 were not read.
  the pool split: without --max-mamba-cache-size the state pool takes mamba_full_memory_ratio /
    (1 + ratio) of the profiled rest (0.5.23 l.3352-3356; planner/engines/sglang/mamba_pool.py),
    said with SGLang's "Mamba Cache is allocated." line.
"""

from __future__ import annotations

from hkv.planner.engines.sglang.plan import SglangPlan
from hkv.planner.engines.sglang.running_requests import running_requests
from hkv.planner.engines.sglang.startup_lines import start_up_lines
from hkv.planner.errors import DoesNotFitError
from hkv.planner.sizes import format_gib
from hkv.planner.startup.issue import StartupIssue, StartupVerdict
from hkv.planner.startup.release_range import ReleaseRange

CAP_WARNING = ReleaseRange("SGLang", (0, 5, 17))
SILENT_CAP = ReleaseRange("SGLang", (0, 5, 10), (0, 5, 16))
MODELED = ReleaseRange("SGLang", (0, 5, 10), (0, 5, 23))
_FLAGS = {"mem_fraction_static": "--mem-fraction-static", "tp": "--tp"}


def sglang_startup(planned: SglangPlan) -> StartupVerdict:
    """A plan plan_sglang returned starts; its warnings."""
    warnings = tuple(w for w in (_mamba_cap(planned), _pool_split(planned)) if w is not None)
    return StartupVerdict.of("sglang", planned.resolution.rules.version_text, (), warnings)


def sglang_refusal(error: DoesNotFitError, version: str) -> StartupVerdict:
    """The verdict of a plan plan_sglang refused (its message is hkv's account of SGLang's)."""
    flags = [_FLAGS[f] for f in error.fields if f in _FLAGS]
    fix = f"raise {' or '.join(flags)}" if flags else None
    return StartupVerdict.of("sglang", version, (StartupIssue("no_memory", str(error), fix, MODELED.text),), ())


def _mamba_cap(planned: SglangPlan) -> StartupIssue | None:
    res = planned.resolution
    if res.mamba is None or not res.running.capped_by_mamba:
        return None
    pools, rules, args = res.pools, res.rules, res.args
    uncapped = running_requests(pools.max_total_num_tokens, pools.context_len, args.max_running_requests,
                                token_cap=rules.requested_running_token_cap, mamba_cap=None).max_running_requests
    detail = (f"{res.mamba.slots:,} state slots at {res.mamba.slots_per_request} a request run "
              f"{pools.max_running_requests:,} requests; without the state pool SGLang's cap would be {uncapped:,}")
    fix = (f"--max-mamba-cache-size > {res.mamba.slots} or --mamba-full-memory-ratio > "
           f"{args.mamba_full_memory_ratio:g} (either takes memory from the KV pool)")
    if CAP_WARNING.holds(rules.version):
        line = next(li for li in start_up_lines(res, planned.chunked_prefill_size) if li.startswith("max_running_"))
        return StartupIssue("max_running_requests_capped_by_mamba", line, fix, CAP_WARNING.text, detail=detail)
    return StartupIssue("max_running_requests_capped_by_mamba",
                        f"max_running_requests={pools.max_running_requests} (capped by the state pool, no warning)",
                        fix, SILENT_CAP.text, detail=detail)


def _pool_split(planned: SglangPlan) -> StartupIssue | None:
    res = planned.resolution
    mamba, args = res.mamba, res.args
    if mamba is None or args.max_mamba_cache_size is not None:
        return None
    ratio = args.mamba_full_memory_ratio
    line = next(li for li in start_up_lines(res, planned.chunked_prefill_size) if li.startswith("Mamba Cache"))
    state_bytes = (mamba.slots + 1) * mamba.state.slot_bytes
    return StartupIssue(
        "mamba_pool_split", line.rstrip(), None, MODELED.text,
        detail=f"mamba_full_memory_ratio {ratio:g} gives the state pool {ratio / (1 + ratio):.0%} of the "
               f"{format_gib(res.pools.available_bytes)} rest: {mamba.slots:,} slots ({format_gib(state_bytes)}, "
               f"{mamba.running_cap:,} requests at {mamba.slots_per_request} a request); the KV pool gets "
               f"{format_gib(mamba.rest_gib * 2**30)} ({res.pools.max_total_num_tokens:,} tokens)")
